"""The client terminal an agent asks for (`terminal/*`): the commands it runs and their bounded
output (terminals.py), and which commands the user allowed (permits.py)."""
