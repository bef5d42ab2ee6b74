"""The lake: the Delta tables of schemas/tables.py read and written one period or version at a time."""
