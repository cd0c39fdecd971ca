"""Hostile: importing the file never finishes."""
while True:
    pass
