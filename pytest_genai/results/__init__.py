"""The results spine: the only code that writes or reads the ``extra_info["genai"]`` object of the JSON contract.
The ground floor of the results half: it imports no other pytest-genai package but the root's helpers."""
