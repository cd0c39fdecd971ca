"""Hostile: importing the file never finishes (it sleeps rather than spins: the grader stops it the same way, and a
spinning loop would take a core from the rest of the suite)."""
import time

while True:
    time.sleep(1)
