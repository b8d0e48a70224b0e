"""What goes into a prompt besides the user's words: attached files (resources.py) and images
(images.py), the reason of a rejection (reasons.py), the transcript a rewind seeds a new session
with (rewind.py), and the one-turn-at-a-time gate with the queue of prompts typed meanwhile
(prompt_queue.py)."""
