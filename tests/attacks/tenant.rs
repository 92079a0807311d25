//! Attacks a tenant mounts with the aggregated `edit` role in a namespace of its own.
