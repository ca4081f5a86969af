"""Before a run: the token estimates of `make plan` and the simulated world's variances for `make power`."""
