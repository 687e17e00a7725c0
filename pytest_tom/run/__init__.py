"""The pytest glue: collection, items, the session hooks' work, terminal progress and failure listing. Everything here
needs pytest; the logic it drives lives in engine/, gates/, output/ and robustness/.
"""
