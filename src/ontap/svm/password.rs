//! Passwords for the SVM-scoped account.
//!
//! Letters and digits only: symbols have broken HTTP Basic auth in some ONTAP clients, and 24
//! alphanumeric characters still carry about 143 bits of entropy. The result satisfies ONTAP's
//! default policy: at least 8 characters (7077919), letters and digits (7077920), not
//! containing the user name (7077918); and, beyond it, at least one upper-case letter, one
//! lower-case letter and one digit, which stricter custom policies ask for.

use rand::Rng;
use rand::distr::Alphanumeric;
use secrecy::SecretString;

/// Length of generated passwords.
pub const PASSWORD_LEN: usize = 24;

/// A fresh password for the account `username`, from the thread-local CSPRNG (ChaCha seeded
/// from the operating system).
pub fn generate_password(username: &str) -> SecretString {
    let mut rng = rand::rng();
    let candidates = std::iter::repeat_with(|| {
        (&mut rng)
            .sample_iter(Alphanumeric)
            .take(PASSWORD_LEN)
            .map(char::from)
            .collect::<String>()
    });
    // The loop ends: a random candidate fails the checks with probability below 2 %, except for
    // a one-character user name, which is invalid in ONTAP anyway and still passes about half
    // of the time.
    SecretString::from(first_acceptable(candidates, username))
}

/// The first candidate that satisfies [`meets_policy`].
fn first_acceptable(candidates: impl Iterator<Item = String>, username: &str) -> String {
    candidates
        .into_iter()
        .find(|c| meets_policy(c, username))
        .unwrap_or_default()
}

/// Whether `password` is one this module would hand out for `username`: at least
/// [`PASSWORD_LEN`] ASCII letters and digits, with an upper-case letter, a lower-case letter and
/// a digit, and not containing the user name (compared case-insensitively, as ONTAP does).
pub fn meets_policy(password: &str, username: &str) -> bool {
    password.len() >= PASSWORD_LEN
        && password.chars().all(|c| c.is_ascii_alphanumeric())
        && password.chars().any(|c| c.is_ascii_uppercase())
        && password.chars().any(|c| c.is_ascii_lowercase())
        && password.chars().any(|c| c.is_ascii_digit())
        && (username.is_empty()
            || !password
                .to_ascii_lowercase()
                .contains(&username.to_ascii_lowercase()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashSet;

    use secrecy::ExposeSecret;

    use super::*;

    #[test]
    fn generated_passwords_meet_the_policy() {
        let mut seen = HashSet::new();
        for _ in 0..2000 {
            let p = generate_password("vsadmin-1a2b3c4d");
            let p = p.expose_secret();
            assert_eq!(p.len(), PASSWORD_LEN);
            assert!(meets_policy(p, "vsadmin-1a2b3c4d"), "{p}");
            assert!(seen.insert(p.to_string()), "a password repeated");
        }
    }

    #[test]
    fn short_alphanumeric_usernames_are_avoided() {
        // "ab1" turns up in a random 24-character string now and then; it must never survive.
        for _ in 0..3000 {
            let p = generate_password("Ab1");
            assert!(!p.expose_secret().to_lowercase().contains("ab1"));
        }
    }

    #[test]
    fn candidates_containing_the_username_are_skipped() {
        let candidates = [
            "xxOpsAdmin1xxxxxxxxxxxxx", // contains the user name, other case
            "abcdefghijklmnopqrstuvwx", // no upper case, no digit
            "ABCDEFGHIJKLMNOPQRSTUVW1", // no lower case
            "Abcdefghijklmnop1234567",  // too short
            "Abcdefghijkl-mnop1234567", // a symbol
            "Abcdefghijklmnop12345678", // fine
        ]
        .map(String::from);
        assert_eq!(
            first_acceptable(candidates.into_iter(), "opsadmin1"),
            "Abcdefghijklmnop12345678"
        );
    }

    #[test]
    fn policy() {
        assert!(meets_policy("Abcdefghijklmnop12345678", ""));
        assert!(!meets_policy("Abcdefghijklmnop12345678", "MNOP"));
        assert!(meets_policy("Abcdefghijklmnop12345678", "vsadmin-x"));
    }

    #[test]
    fn debug_does_not_show_the_password() {
        let p = generate_password("u-1");
        assert!(!format!("{p:?}").contains(p.expose_secret()));
    }
}
