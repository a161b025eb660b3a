"""The answer path: a question parsed once (``question``), searched (``retrieve``), decided
(``decide``), answered (``generate``, ``quote``), cited (``citations``) and checked (``check``),
run in order by ``pipeline.Pipeline``. Knows nothing of the web layer or the CLI."""
