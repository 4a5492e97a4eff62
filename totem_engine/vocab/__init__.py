"""Wire-neutral types: what the engine says to a model and a model back, whatever the provider.

``tools``: a tool as the model sees it, a call and its arguments, the error a tool reads back;
``messages``: the conversation and the images in it; ``chat``: one request and the chunks of its
answer; ``accounts``: a tool result told in one line or cut to fit. Providers, tools, checks,
compaction, textcalls and the turn all speak these; this package imports none of them.
"""
