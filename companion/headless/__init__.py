"""The front end without Sublime: the headless editor (reviews on a terminal, or decided by a
policy), the console shared by what a session prints and asks, the terminal chat, its /changes and
/restore commands, and the doctor's headless report. Above the rooms: it may import them and the
runtime, never the Sublime adapter."""
