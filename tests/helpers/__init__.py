"""Shared helpers of the test suite, imported as ``tests.helpers.<module>``.

They hold independent judges and readers (plain json/numpy/pyarrow, Python integers) that several
test folders share; none of them is a test module, so pytest does not collect them.
"""
