"""Suite-wide settings: no test depends on wall-clock speed, so hypothesis runs without deadlines everywhere."""

from hypothesis import settings

settings.register_profile("tokenomy", deadline=None)
settings.load_profile("tokenomy")
