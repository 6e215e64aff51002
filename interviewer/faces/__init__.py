"""The faces: the web app, the terminal interview, the command line and batch grading."""
