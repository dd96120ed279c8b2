"""The jobs' tables as the migrations build them: the columns (``table``), the fields
that hold names (``names``), the indexes each database builds its own way (``indexes``,
``failures``), the tags' side table (``tag_table``), and the operation that remakes an
index of a live table (``online_index``). Definitions, not statements: schema code may
read the vendor of the schema editor's connection."""
