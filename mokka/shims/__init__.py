"""The logic behind Mokka's stand-in commands (fabricmanager); the commands in mokka/cmd stay thin."""
