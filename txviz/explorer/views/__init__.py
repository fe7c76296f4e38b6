"""The explorer's pages drawn as tabs: the attention explorer's (``attention``) and the query-key
space's (``query_key``)."""
