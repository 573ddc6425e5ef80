"""Tables of our numbers beside the numbers the papers report."""
