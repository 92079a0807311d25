//! Password rotation as a client that keeps logging in sees it: `PATCH
//! /api/security/accounts/{owner.uuid}/{name}` with `password` takes effect when it is
//! answered. Every login sent after the answer succeeds only with the new password; every login
//! answered before the PATCH was sent succeeds only with the old one; logins in between see the
//! old password work until the change and never again after.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use common::{Mock, MockApi, error_code, fast_mock, poll};
use reqwest::{Method, StatusCode};
use serde_json::json;

const OLD: &str = "Rotation123old";
const NEW: &str = "Rotation456new";

/// One login: when it was sent and answered, and whether the password was accepted.
struct Login {
    sent: Instant,
    answered: Instant,
    accepted: bool,
}

async fn login(mock: &Mock, password: &str) -> Login {
    let sent = Instant::now();
    let (status, _) = mock.as_user("rotor", password, "/api/cluster").await;
    let answered = Instant::now();
    assert!(
        matches!(status, StatusCode::OK | StatusCode::UNAUTHORIZED),
        "{status}"
    );
    Login {
        sent,
        answered,
        accepted: status == StatusCode::OK,
    }
}

#[tokio::test]
async fn logins_during_a_password_change_switch_once_from_old_to_new() {
    let mock = Arc::new(Mock::start(fast_mock()).await);
    let svm = mock.create_svm("rot").await;
    mock.create_account(&svm, "rotor", OLD).await;

    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicUsize::new(0));
    let logins = |password: &'static str| {
        let (mock, stop, count) = (mock.clone(), stop.clone(), count.clone());
        tokio::spawn(async move {
            let mut seen = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                seen.push(login(&mock, password).await);
                count.fetch_add(1, Ordering::SeqCst);
            }
            seen
        })
    };
    let (with_old, with_new) = (logins(OLD), logins(NEW));
    // Both loggers have run before the change.
    poll(
        "both loggers logged in",
        std::time::Duration::from_secs(10),
        async || (count.load(Ordering::SeqCst) >= 6).then_some(()),
    )
    .await;

    let patch_sent = Instant::now();
    let resp = mock
        .admin(
            Method::PATCH,
            &format!("/api/security/accounts/{svm}/rotor"),
        )
        .json(&json!({ "password": NEW }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let patch_answered = Instant::now();
    // Logins after the answer: at least one of each, sent strictly after it.
    let after_old = login(&mock, OLD).await;
    let after_new = login(&mock, NEW).await;
    stop.store(true, Ordering::SeqCst);
    let (mut old, mut new) = (with_old.await.unwrap(), with_new.await.unwrap());
    old.push(after_old);
    new.push(after_new);

    for l in &old {
        if l.answered < patch_sent {
            assert!(l.accepted, "the old password worked until the change");
        }
        if l.sent > patch_answered {
            assert!(
                !l.accepted,
                "the old password stops working once the change is answered"
            );
        }
    }
    for l in &new {
        if l.answered < patch_sent {
            assert!(
                !l.accepted,
                "the new password did not work before the change"
            );
        }
        if l.sent > patch_answered {
            assert!(
                l.accepted,
                "the new password works once the change is answered"
            );
        }
    }
    // Each password switches once: no login accepts the old one after one refused it, nor
    // refuses the new one after one accepted it.
    old.sort_by_key(|l| l.sent);
    new.sort_by_key(|l| l.sent);
    let first_refused = old.iter().position(|l| !l.accepted).unwrap();
    assert!(old[first_refused..].iter().all(|l| !l.accepted));
    let first_accepted = new.iter().position(|l| l.accepted).unwrap();
    assert!(new[first_accepted..].iter().all(|l| l.accepted));
}

#[tokio::test]
async fn the_documented_password_rules_hold_on_rotation() {
    let mock = Mock::start(fast_mock()).await;
    let svm = mock.create_svm("rules").await;
    mock.create_account(&svm, "rotor", OLD).await;
    let path = format!("/api/security/accounts/{svm}/rotor");
    let change = |password: &str| {
        mock.admin(Method::PATCH, &path)
            .json(&json!({ "password": password }))
            .send()
    };
    for (password, code) in [
        (OLD, "7077925"),
        ("short1", "7077919"),
        ("rotorRotor123", "7077918"),
        ("onlyletters", "7077920"),
    ] {
        let (status, body) = common::read(change(password).await.unwrap()).await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, code),
            "{password}"
        );
    }
    // A refused change leaves the password as it was.
    assert!(login(&mock, OLD).await.accepted);
    assert_eq!(change(NEW).await.unwrap().status(), StatusCode::OK);
    let (status, body) = common::read(change(OLD).await.unwrap()).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "7077924")
    );
}
