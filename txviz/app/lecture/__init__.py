"""The lecture's screens and their plumbing: the room's console, projector and student bars, pushes to
followers, the solo tour, lessons and the "Start here" path, asking the class."""
