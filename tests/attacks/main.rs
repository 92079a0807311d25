//! The tenant boundary, attacked (issue 22): each test mounts one attack as the identity that
//! would mount it — a tenant bound only to the aggregated `edit` role in its namespace, or a
//! shoot owner who controls the Shoot's annotations and providerConfig — and asserts that the
//! victim's credentials still authenticate against mock ONTAP and nothing of theirs changed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use operator_test_support as support;

mod grants;
mod shoot_owner;
mod tenant;
