"""One tiny encoder-decoder, four tasks by prefix: parse, tag, count and translate sentences of the
project's small grammar (the generator is language.py, the network model.py, what the page shows
results.py and views.py)."""
