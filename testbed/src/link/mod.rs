//! Pure link model of one satellite-link direction (capacity, delay, queue, loss, outages), clock passed in.
