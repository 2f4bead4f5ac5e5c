//! The one integration-test harness of this package (docs/testing.md):
//! every test file is a module of this binary.

mod adversarial;
mod corpus;
mod no_panic;
mod user_policy;
