import inspect

from textutil import slugify, word_count

assert (slugify.__doc__ or "").strip(), "slugify has no docstring"
hints = inspect.get_annotations(slugify)
missing = {"text", "separator", "return"} - set(hints)
assert not missing, f"slugify lacks type hints for {sorted(missing)}"
assert slugify("  Hello, World! ") == "hello-world"
assert slugify("A b", "_") == "a_b"
assert word_count("a b c") == 3
print("ok")
