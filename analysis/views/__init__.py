"""What the commands show: display frames, plots and their data, IBM's rows, the control arms' decomposition.
Stands on runs and statistics."""
