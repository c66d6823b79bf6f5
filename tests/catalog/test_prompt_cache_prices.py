"""Golden: providers' prompt-cache terms as their pages state them (issue 28, item 5): Anthropic's 5-minute cache
refreshed by each hit with a 1-hour option and a write surcharge, OpenAI's in-memory 5-10 minutes or 24-hour
retention with no write fee, Gemini's explicit caches living 1 hour by default with a storage fee, DeepSeek's disk
cache with no stated lifetime."""

import pytest

from tokenomy.catalog import loader


@pytest.mark.parametrize("name,ttl,ttl_max,surcharge", [
    ("claude-opus-4-5", 300, 3600, True), ("claude-sonnet-4-5", 300, 3600, True),
    ("openai-gpt-5", 600, 86400, False), ("gemini-2-5-pro", 3600, None, False), ("deepseek-v3-2", None, None, False)])
def test_cache_lifetimes(name, ttl, ttl_max, surcharge):
    c = loader.price_file(name).cache
    assert (c.ttl_s, c.ttl_max_s, c.write_surcharge) == (ttl, ttl_max, surcharge)


def test_every_sheet_with_a_cached_price_states_its_cache_terms():
    for n in loader.price_names():
        p = loader.price_file(n)
        if p.cache_read_usd_per_mtok is not None:
            assert p.cache is not None, n
            # a write surcharge is exactly what a separate write price records
            assert p.cache.write_surcharge == (p.cache_write_5m_usd_per_mtok is not None), n


def test_only_explicit_caches_bill_storage():
    assert loader.price_file("gemini-2-5-pro").cache.storage_usd_per_mtok_hour == 4.5
    assert loader.price_file("claude-opus-4-5").cache.storage_usd_per_mtok_hour is None
