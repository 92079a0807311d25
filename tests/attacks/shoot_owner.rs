//! Attacks a shoot owner mounts through the Shoot (its annotations, its providerConfig).
