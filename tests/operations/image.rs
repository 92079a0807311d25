//! The image has two recipes: the `Dockerfile`, for whoever builds with docker, and
//! `hack/image.sh`, which builds it here without a daemon or a base image to pull. Both must make
//! the same image: the same base, user, entrypoint, command and files at the same paths, with the
//! same helm. The script says what it builds (`hack/image.sh describe`); an archive it built, when
//! there is one, is read back and held to that too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// What the Dockerfile's final stage says, and the global ARG defaults.
#[derive(Debug, Default)]
struct FinalStage {
    from: String,
    user: Option<String>,
    entrypoint: Option<Vec<String>>,
    cmd: Option<Vec<String>>,
    workdir: Option<String>,
    env: Vec<String>,
    copies: Vec<String>,
    args: BTreeMap<String, String>,
}

/// Instructions with continuation lines joined, comments and blank lines dropped.
fn instructions(dockerfile: &str) -> Vec<(String, String)> {
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in dockerfile.lines() {
        let trimmed = line.trim();
        if current.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                joined.push(std::mem::take(&mut current));
            }
        }
    }
    joined
        .into_iter()
        .map(|i| {
            let (keyword, rest) = i.split_once(char::is_whitespace).unwrap_or((&i, ""));
            (keyword.to_ascii_uppercase(), rest.trim().to_owned())
        })
        .collect()
}

/// Only the exec form: the shell form runs `/bin/sh -c`, and the image has no shell.
fn exec_form(keyword: &str, rest: &str) -> Vec<String> {
    serde_json::from_str(rest).unwrap_or_else(|e| {
        panic!("{keyword} {rest}: only the JSON (exec) form works without a shell: {e}")
    })
}

fn copy_destinations(rest: &str) -> Vec<String> {
    let words: Vec<&str> = rest
        .split_whitespace()
        .filter(|w| !w.starts_with("--"))
        .collect();
    let (dest, sources) = words.split_last().expect("COPY names a destination");
    if let Some(dir) = dest.strip_suffix('/') {
        sources
            .iter()
            .map(|s| format!("{dir}/{}", s.rsplit('/').next().unwrap_or(s)))
            .collect()
    } else {
        assert_eq!(
            sources.len(),
            1,
            "COPY of several sources into a file: {rest}"
        );
        vec![(*dest).to_owned()]
    }
}

fn final_stage(dockerfile: &str) -> FinalStage {
    let all = instructions(dockerfile);
    let last_from = all
        .iter()
        .rposition(|(k, _)| k == "FROM")
        .expect("the Dockerfile has a FROM");
    let mut stage = FinalStage::default();
    // ARGs before the first FROM are the build's global defaults.
    for (_, rest) in all
        .iter()
        .take_while(|(k, _)| k != "FROM")
        .filter(|(k, _)| k == "ARG")
    {
        if let Some((name, value)) = rest.split_once('=') {
            stage.args.insert(name.to_owned(), value.to_owned());
        }
    }
    for (keyword, rest) in &all[last_from..] {
        let rest = rest.clone();
        match keyword.as_str() {
            "FROM" => {
                stage.from = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            }
            "USER" => stage.user = Some(rest),
            "ENTRYPOINT" => stage.entrypoint = Some(exec_form(keyword, &rest)),
            "CMD" => stage.cmd = Some(exec_form(keyword, &rest)),
            "WORKDIR" => stage.workdir = Some(rest),
            "ENV" => stage.env.push(rest.replacen(' ', "=", 1)),
            "COPY" => stage.copies.extend(copy_destinations(&rest)),
            other => panic!(
                "the Dockerfile's final stage has {other} {rest}, which hack/image.sh does not do: \
                 teach the script the same, then this test"
            ),
        }
    }
    stage
}

fn describe() -> Value {
    let script = crate::support::repo_root().join("hack/image.sh");
    serde_json::from_slice(&crate::support::stdout_of(
        Command::new(script).arg("describe"),
    ))
    .unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

fn described_files<'a>(described: &'a Value, origin: &str) -> Vec<&'a Value> {
    described["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["origin"] == origin)
        .collect()
}

fn dockerfile_stage() -> FinalStage {
    final_stage(&std::fs::read_to_string(crate::support::repo_root().join("Dockerfile")).unwrap())
}

#[test]
fn the_dockerfile_and_hack_image_sh_build_the_same_image() {
    let stage = dockerfile_stage();
    let described = describe();
    assert_eq!(
        stage.from, described["base"],
        "the Dockerfile's runtime base is not what hack/image.sh lays out"
    );
    assert_eq!(
        stage.user.as_deref(),
        described["user"].as_str(),
        "USER differs"
    );
    assert_eq!(
        stage.entrypoint,
        Some(strings(&described["entrypoint"])),
        "ENTRYPOINT differs"
    );
    assert_eq!(stage.cmd, Some(strings(&described["cmd"])), "CMD differs");
    // Without WORKDIR or ENV the Dockerfile inherits the base's, which the script writes itself.
    if let Some(workdir) = &stage.workdir {
        assert_eq!(workdir, &described["workdir"], "WORKDIR differs");
    }
    let env = strings(&described["env"]);
    for e in &stage.env {
        assert!(
            env.contains(e),
            "the Dockerfile sets {e}, hack/image.sh does not"
        );
    }
    let mut copies = stage.copies.clone();
    copies.sort();
    let mut script_copies: Vec<String> = described_files(&described, "copy")
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    script_copies.sort();
    assert_eq!(
        copies, script_copies,
        "the Dockerfile's COPY destinations are not the files hack/image.sh puts on its base"
    );
    assert_eq!(
        stage.args.get("HELM_VERSION").map(String::as_str),
        described["helm_version"].as_str(),
        "the Dockerfile's HELM_VERSION is not hack/versions.env's"
    );
}

/// The archive `hack/image.sh build` writes by default for the chart's appVersion.
fn default_archive() -> PathBuf {
    let root = crate::support::repo_root();
    let chart = std::fs::read_to_string(root.join("deploy/chart/Chart.yaml")).unwrap();
    let chart: Value = serde_yaml::from_str(&chart).unwrap();
    let tag = chart["appVersion"].as_str().unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    target.join(format!("image/ontap-operator-{tag}.tar"))
}

/// One member of the OCI archive, a tar of the image layout.
fn member(archive: &Path, name: &str) -> Vec<u8> {
    crate::support::stdout_of(Command::new("tar").arg("-xOf").arg(archive).arg(name))
}

fn blob(archive: &Path, digest: &Value) -> Vec<u8> {
    let digest = digest.as_str().unwrap();
    member(
        archive,
        &format!("blobs/sha256/{}", digest.trim_start_matches("sha256:")),
    )
}

/// `tar -tv`'s permission string as an octal mode.
fn octal(perms: &str) -> String {
    let bits = perms.as_bytes();
    let mut mode = 0u32;
    for &c in &bits[1..10] {
        mode = mode * 2 + u32::from(!matches!(c, b'-' | b'S' | b'T'));
    }
    if matches!(bits[3], b's' | b'S') {
        mode |= 0o4000;
    }
    if matches!(bits[6], b's' | b'S') {
        mode |= 0o2000;
    }
    if matches!(bits[9], b't' | b'T') {
        mode |= 0o1000;
    }
    format!("{mode:04o}")
}

/// The layer's entries: path (directories ending in /) -> (mode, uid:gid).
fn layer_entries(archive: &Path, layer: &Value) -> BTreeMap<String, (String, String)> {
    let mut list = Command::new("tar")
        .args(["-tzv", "--numeric-owner", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = blob(archive, layer);
    let mut stdin = list.stdin.take().unwrap();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &bytes));
    let out = list.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let path = fields[5..].join(" ");
            let relative = path.strip_prefix("./").unwrap_or(&path);
            let path = match relative.trim_start_matches('/') {
                "." => "/".to_owned(),
                relative => format!("/{relative}"),
            };
            (path, (octal(fields[0]), fields[1].replace('/', ":")))
        })
        .collect()
}

#[test]
fn the_built_archive_is_what_hack_image_sh_describes() {
    let archive = default_archive();
    if !archive.exists() {
        eprintln!(
            "{} does not exist (hack/image.sh build): not checked",
            archive.display()
        );
        return;
    }
    let stale = "rebuild it: hack/image.sh build";
    let described = describe();
    let index: Value = serde_json::from_slice(&member(&archive, "index.json")).unwrap();
    let manifest: Value =
        serde_json::from_slice(&blob(&archive, &index["manifests"][0]["digest"])).unwrap();
    let config: Value =
        serde_json::from_slice(&blob(&archive, &manifest["config"]["digest"])).unwrap();
    let config = &config["config"];
    for (key, field) in [
        ("User", "user"),
        ("Entrypoint", "entrypoint"),
        ("Cmd", "cmd"),
        ("WorkingDir", "workdir"),
        ("Env", "env"),
    ] {
        assert_eq!(
            config[key], described[field],
            "the archive's {key}: {stale}"
        );
    }

    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "one layer");
    let entries = layer_entries(&archive, &layers[0]["digest"]);
    let mut expected: Vec<&str> = Vec::new();
    for file in described["files"].as_array().unwrap() {
        let path = file["path"].as_str().unwrap();
        expected.push(path);
        let found = entries.get(path);
        assert_eq!(
            found.map(|(mode, owner)| (mode.as_str(), owner.as_str())),
            Some((
                file["mode"].as_str().unwrap(),
                file["owner"].as_str().unwrap()
            )),
            "{path} in the archive: {stale}"
        );
    }
    // Besides the described files only directories and the shared libraries the operator
    // links: no shell, no package manager, nothing left over.
    let mut libraries = Vec::new();
    for path in entries.keys() {
        if path.ends_with('/') || expected.contains(&path.as_str()) {
            continue;
        }
        assert!(
            path.starts_with("/lib/") || path.starts_with("/lib64/"),
            "{path} is in the image but not in hack/image.sh's layout"
        );
        libraries.push(path.rsplit('/').next().unwrap_or_default());
    }
    for needed in ["libc.so.6", "ld-linux-x86-64.so.2"] {
        assert!(
            libraries.contains(&needed),
            "no {needed} in the image: {libraries:?}"
        );
    }
    for absent in ["sh", "bash", "dash", "busybox", "apt", "apt-get", "dpkg"] {
        assert!(
            !entries.keys().any(|p| p.rsplit('/').next() == Some(absent)),
            "the image has a {absent}"
        );
    }
}
