"""tokenomy: the blackboard math of LLM training and serving, checkable against reality."""
