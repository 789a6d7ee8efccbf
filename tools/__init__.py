"""Developer tools of the checkout (not shipped in the wheel): the catalog snapshot that compares
two databases, and ``make migration``, which writes the next migration from the schema files."""
