//! What a release ships (scripts/dist.sh, run by the test command before the tests): the
//! portable archive runs from a fresh directory, the Debian package installs, runs and purges
//! through apt, and the release workflow passes actionlint.

use crate::harness::run_program;
use std::path::{Path, PathBuf};
use std::process::Command;

/// dist/, or where STRAIN_TEST_DIST says scripts/dist.sh wrote its files.
fn dist() -> PathBuf {
    let dir = std::env::var_os("STRAIN_TEST_DIST")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("dist"), PathBuf::from);
    assert!(
        dir.join("strain-x86_64-linux-gnu.tar.gz").exists(),
        "{} has no archive: scripts/test.sh builds it with scripts/dist.sh",
        dir.display()
    );
    dir
}

/// A command's standard output; the test fails with its stderr when it fails.
fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The C library's own libraries: all a portable binary may need.
const LIBC_OWN: [&str; 6] =
    ["libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2"];

/// Asserts the binary needs no shared library but the C library's, and no glibc past 2.28.
fn assert_portable(bin: &Path) {
    let dynamic = output("readelf", &["-d", bin.to_str().unwrap()]);
    let needed: Vec<&str> = dynamic
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.strip_suffix(']'))
        .collect();
    assert!(needed.contains(&"libc.so.6"), "{dynamic}");
    assert!(needed.iter().all(|n| LIBC_OWN.contains(n)), "{needed:?}");
    let symbols = output("objdump", &["-T", bin.to_str().unwrap()]);
    let newest = symbols
        .split("GLIBC_")
        .skip(1)
        .filter_map(|s| {
            let v: String = s.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
            Some((parts.next()?, parts.next().unwrap_or(0)))
        })
        .max()
        .unwrap();
    assert!(newest <= (2, 28), "needs GLIBC_{}.{}", newest.0, newest.1);
}

/// Runs `strain demo -d 1s` with this binary: the requests it counted are the ones its origin
/// saw, on its 10 connections.
fn assert_demo(bin: &Path) {
    let run = run_program(bin.to_str().unwrap(), &["demo", "-d", "1s"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let counted: u64 = run
        .stdout
        .lines()
        .find(|l| l.contains(" requests in "))
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no request count: {}", run.stdout));
    assert!(counted > 100, "{}", run.stdout);
    assert_eq!(run.stderr.trim(), format!("origin saw {counted} requests on 10 connections"), "{}", run.stdout);
}

#[test]
fn the_archive_runs_from_a_fresh_directory() {
    let archive = dist().join("strain-x86_64-linux-gnu.tar.gz");
    let fresh = tempfile::tempdir().unwrap();
    output("tar", &["-xzf", archive.to_str().unwrap(), "-C", fresh.path().to_str().unwrap()]);
    let version = env!("CARGO_PKG_VERSION");
    let top = fresh.path().join(format!("strain-{version}"));
    let mut files: Vec<String> =
        walk(&top).iter().map(|p| p.strip_prefix(&top).unwrap().display().to_string()).collect();
    files.sort();
    assert_eq!(
        files,
        [
            "LICENSE",
            "README.md",
            "completions/_strain",
            "completions/strain.bash",
            "completions/strain.fish",
            "strain",
            "strain.1"
        ]
    );
    let bin = top.join("strain");
    assert_portable(&bin);
    let said = output(bin.to_str().unwrap(), &["--version"]);
    assert!(said.starts_with(&format!("strain {version} (")), "{said}");
    assert_demo(&bin);
    // The man page renders, and bash takes the completions.
    let page = output("man", &["-l", "-P", "cat", top.join("strain.1").to_str().unwrap()]);
    assert!(page.contains("HTTP load generator"), "{page}");
    let script = format!("source {} && complete -p strain", top.join("completions/strain.bash").display());
    assert!(output("bash", &["-c", &script]).contains("strain"));
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// What the package installs.
const INSTALLED: [&str; 6] = [
    "/usr/bin/strain",
    "/usr/share/man/man1/strain.1.gz",
    "/usr/share/bash-completion/completions/strain",
    "/usr/share/zsh/vendor-completions/_strain",
    "/usr/share/fish/vendor_completions.d/strain.fish",
    "/usr/share/doc/strain/copyright",
];

/// Purges the package when the test ends, passed or not.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = Command::new("apt-get")
            .args(["purge", "-y", "-qq", "strain"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output();
    }
}

#[test]
fn the_debian_package_installs_runs_and_purges() {
    let version = env!("CARGO_PKG_VERSION");
    let deb = dist().join(format!("strain_{version}_amd64.deb"));
    let deb = deb.to_str().unwrap();
    let fields = output("dpkg-deb", &["-f", deb, "Package", "Version", "Architecture", "Depends"]);
    assert_eq!(fields, format!("Package: strain\nVersion: {version}\nArchitecture: amd64\nDepends: libc6 (>= 2.28)\n"));
    let listed = output("dpkg-deb", &["-c", deb]);
    for path in INSTALLED {
        assert!(listed.contains(&format!(".{path}\n")), "{path}: {listed}");
    }
    // The machine's own strain, if any, is not this test's to remove.
    let before = Command::new("dpkg").args(["-s", "strain"]).output().unwrap();
    assert!(
        !before.status.success(),
        "a strain package is installed here already: the test installs and purges its own"
    );

    let _purge = Purge;
    let install = Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends", deb])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .unwrap();
    assert!(install.status.success(), "{}", String::from_utf8_lossy(&install.stderr));
    for path in INSTALLED {
        assert!(Path::new(path).exists(), "{path} is not installed");
    }
    assert_eq!(output("man", &["-w", "strain"]).trim(), "/usr/share/man/man1/strain.1.gz");
    let said = output("/usr/bin/strain", &["--version"]);
    assert!(said.starts_with(&format!("strain {version} (")), "{said}");
    assert_demo(Path::new("/usr/bin/strain"));

    output("apt-get", &["purge", "-y", "-qq", "strain"]);
    for path in INSTALLED {
        assert!(!Path::new(path).exists(), "{path} is left after the purge");
    }
    assert!(!Path::new("/usr/share/doc/strain").exists());
    assert!(!Command::new("dpkg").args(["-s", "strain"]).output().unwrap().status.success());
}

/// actionlint, built by the test command into target/go-bin.
fn actionlint() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/go-bin/actionlint");
    assert!(path.exists(), "{} is missing: scripts/test.sh builds it", path.display());
    path
}

#[test]
fn the_release_workflow_passes_actionlint() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workflow = root.join(".github/workflows/release.yml");
    let lint = Command::new(actionlint()).arg("-no-color").arg(&workflow).current_dir(root).output().unwrap();
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stdout));
    assert_eq!(String::from_utf8_lossy(&lint.stdout), "");
    // It runs the test command, builds with dist.sh and attaches the files with their sums.
    let text = std::fs::read_to_string(&workflow).unwrap();
    for step in ["bash scripts/test.sh", "bash scripts/dist.sh", "sha256sum", "gh release upload"] {
        assert!(text.contains(step), "{step}");
    }
    // The same actionlint refuses a careless workflow: an unknown runner label and an
    // expression on an undefined context.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yml");
    std::fs::write(
        &bad,
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-lates\n    steps:\n      - run: echo ${{ secret.TOKEN }}\n",
    )
    .unwrap();
    let lint = Command::new(actionlint()).arg("-no-color").arg(&bad).output().unwrap();
    let said = String::from_utf8_lossy(&lint.stdout);
    assert!(!lint.status.success(), "{said}");
    assert!(said.contains("ubuntu-lates") && said.contains("secret"), "{said}");
}
