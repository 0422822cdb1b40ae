//! Records the commit strain is built from, for `strain --version` (absent outside a git
//! checkout, or without git), and tells the linker where the static C++ runtime is (see
//! `.cargo/config.toml`: BoringSSL's few C++ symbols come from libstdc++.a, not libstdc++.so).

fn main() {
    static_cpp_runtime();
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
    println!("cargo:rerun-if-changed=.git/refs");
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    if let Some(c) = commit {
        println!("cargo:rustc-env=STRAIN_COMMIT={c}");
    }
}

/// Adds the directory of the C++ compiler's libstdc++.a to the link search path.
fn static_cpp_runtime() {
    for compiler in ["c++", "g++", "cc"] {
        let found = std::process::Command::new(compiler)
            .arg("-print-file-name=libstdc++.a")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| std::path::PathBuf::from(s.trim()));
        // Without the file the compiler prints the bare name back.
        if let Some(dir) =
            found.filter(|p| p.is_absolute() && p.exists()).and_then(|p| p.parent().map(|d| d.to_owned()))
        {
            println!("cargo:rustc-link-search=native={}", dir.display());
            return;
        }
    }
}
