"""Image captioning with soft and hard attention, on canvases of handwritten digits."""
