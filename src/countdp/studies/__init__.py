"""The studies: each returns DataFrames and check rows; nothing here draws or knows about files of results/."""
