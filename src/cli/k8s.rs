//! `strain k8s-job`: prints a Kubernetes Indexed Job that runs one load as N segments, one pod
//! each, all starting at the same wall-clock instant and writing their results as JSON to
//! stdout, where `kubectl logs ... | strain merge` collects them. Nothing here talks to a
//! cluster: the strain arguments are checked with the real parser, the manifest is built as a
//! small tree and written by [`yaml`], so the output depends only on the flags and the clock.

mod yaml;

use std::io::Write;
use std::time::{Duration, SystemTime};

use clap::Parser;

use super::flags::{Cli, K8sJobFlags};
use super::{one_line, CliError, EXIT_OK};
use crate::config::Target;
use crate::defaults;
use yaml::Y;

/// Kubernetes refuses an Indexed Job with more completions than this.
const MAX_INDEXED_COMPLETIONS: usize = 100_000;

/// The label every strain pod carries; the per-job label is `app.kubernetes.io/instance`.
const APP_LABEL: &str = "app.kubernetes.io/name";
/// The label that tells this Job's pods from another strain Job's.
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// A non-root user id (distroless's `nonroot`); the Dockerfile runs as the same one.
const RUN_AS_USER: u64 = 65532;

/// Strain flags the manifest sets itself or that make no sense in a pod, with the reason.
const REFUSED: [(&str, &str); 8] = [
    ("--json", "the manifest sets --json - (each segment's result on stdout, for strain merge)"),
    ("--segments", "the manifest sets --segments; give it to k8s-job"),
    ("--segment", "Kubernetes gives each pod its segment (JOB_COMPLETION_INDEX)"),
    ("--start-at", "the manifest sets --start-at; use k8s-job's --start-delay"),
    ("--html", "a file written in a pod is lost with it: draw the merged result instead"),
    ("--hdr-log", "a file written in a pod is lost with it"),
    (
        "--threshold",
        "a segment sees only its share of the load, and a failing pod stops the other segments: \
         judge the merged result instead",
    ),
    ("--abort-on-fail", "a segment sees only its share of the load: judge the merged result instead"),
];

/// Runs `strain k8s-job`: prints the manifest on stdout and when the segments start on stderr.
pub fn run(f: &K8sJobFlags) -> Result<i32, CliError> {
    let job = Job::from_flags(f, SystemTime::now())?;
    // Not print!: a closed pipe (`| head`) would panic instead of being one error line.
    let mut out = std::io::stdout().lock();
    out.write_all(job.manifest().as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| CliError::Io { what: "cannot write the manifest".into(), source })?;
    eprintln!(
        "strain: the segments start at {} ({} from now): apply the manifest before then",
        job.start_at_text(),
        humantime::format_duration(f.start_delay.0)
    );
    Ok(EXIT_OK)
}

/// One Job, checked: everything the manifest needs.
#[derive(Debug)]
pub struct Job {
    name: String,
    image: String,
    segments: usize,
    /// When every segment starts (whole seconds).
    start_at: SystemTime,
    cpu: String,
    memory: String,
    /// The container's arguments: the user's load plus the segment flags.
    args: Vec<String>,
    /// Kubernetes ends the Job this long after it starts, whatever happened.
    deadline: Duration,
    /// `--metrics-listen`'s port: the pods are annotated for Prometheus's scrape and the
    /// container declares it.
    metrics_port: Option<u16>,
}

impl Job {
    /// Checks the flags; the start is `start_delay` after `now`.
    pub fn from_flags(f: &K8sJobFlags, now: SystemTime) -> Result<Job, CliError> {
        let usage = |msg: String| Err(CliError::Usage(msg));
        if f.segments == 0 {
            return usage("--segments must be at least 1".into());
        }
        if f.segments > MAX_INDEXED_COMPLETIONS {
            return usage(format!("--segments must be at most {MAX_INDEXED_COMPLETIONS} (Kubernetes' limit)"));
        }
        if !is_dns_label(&f.name) {
            return usage(format!(
                "--name '{}' is not a DNS-1123 label: 1 to 63 lowercase letters, digits or '-', \
                 starting and ending with a letter or digit",
                f.name
            ));
        }
        if f.image.is_empty() || f.image.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return usage(format!("--image '{}' is not an image reference", f.image));
        }
        if f.start_delay.0.is_zero() {
            return usage("--start-delay must be above 0: the manifest is applied after it is printed".into());
        }
        for (flag, value) in [("--cpu", &f.cpu), ("--memory", &f.memory)] {
            if !is_quantity(value) {
                return usage(format!("{flag} '{value}' is not a Kubernetes quantity (e.g. 2, 1500m, 512Mi)"));
            }
        }
        let (run_time, metrics_port) = check_load(&f.args)?;
        // The start is fixed here, when the manifest is printed, not computed in each pod: pods
        // start seconds apart (scheduling, image pulls), so times they derived from their own
        // start would not agree, and no pod can read when the Job was created (the downward API
        // has no creationTimestamp). The price: the manifest must be applied before the start,
        // which the manifest's header, stderr and the README say.
        let start_at = whole_second_after(now + f.start_delay.0);
        let segments = f.segments.to_string();
        let start_text = humantime::format_rfc3339_seconds(start_at).to_string();
        // Our flags go before the script's own `--`, or they would become script arguments.
        let split = f.args.iter().position(|a| a == "--").unwrap_or(f.args.len());
        let mut args: Vec<String> = f.args[..split].to_vec();
        args.extend(["--segments", &segments, "--start-at", &start_text, "--json", "-"].map(String::from));
        args.extend_from_slice(&f.args[split..]);
        Ok(Job {
            name: f.name.clone(),
            image: f.image.clone(),
            segments: f.segments,
            start_at,
            cpu: f.cpu.clone(),
            memory: f.memory.clone(),
            args,
            deadline: f.start_delay.0 + run_time + defaults::K8S_DEADLINE_SLACK,
            metrics_port,
        })
    }

    /// When the segments start, RFC 3339 in UTC.
    pub fn start_at_text(&self) -> String {
        humantime::format_rfc3339_seconds(self.start_at).to_string()
    }

    /// The container's arguments.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The Job as YAML, with a comment saying when it must be applied by.
    pub fn manifest(&self) -> String {
        let mut out = format!(
            "# strain k8s-job: {} segments of one load, starting together at {}.\n\
             # Apply it before then (kubectl apply -f): the start is fixed in the arguments below.\n",
            self.segments,
            self.start_at_text()
        );
        yaml::write(&mut out, &self.tree());
        out
    }

    fn tree(&self) -> Y {
        let n = self.segments as u64;
        let labels = || Y::map([(APP_LABEL, Y::str("strain")), (INSTANCE_LABEL, Y::str(&self.name))]);
        let spread = self.spread();
        let container = self.container();
        Y::map([
            ("apiVersion", Y::str("batch/v1")),
            ("kind", Y::str("Job")),
            ("metadata", Y::map([("name", Y::str(&self.name)), ("labels", labels())])),
            (
                "spec",
                Y::map([
                    ("completionMode", Y::str("Indexed")),
                    ("completions", Y::Int(n)),
                    ("parallelism", Y::Int(n)),
                    // A retried segment would start after the others and measure another test.
                    ("backoffLimit", Y::Int(0)),
                    ("activeDeadlineSeconds", Y::Int(ceil_secs(self.deadline))),
                    ("ttlSecondsAfterFinished", Y::Int(defaults::K8S_TTL_AFTER_FINISHED.as_secs())),
                    (
                        "template",
                        Y::map([
                            ("metadata", self.pod_metadata(labels())),
                            (
                                "spec",
                                Y::map([
                                    ("restartPolicy", Y::str("Never")),
                                    ("affinity", spread),
                                    ("containers", Y::List(vec![container])),
                                ]),
                            ),
                        ]),
                    ),
                ]),
            ),
        ])
    }

    /// Segments spread over nodes where they can be. Preferred, not required: with required
    /// anti-affinity, segments beyond the node count would stay Pending and the Job would never
    /// complete; a shared node still runs them (the pods' CPU requests keep them from crowding
    /// one node).
    fn spread(&self) -> Y {
        Y::map([(
            "podAntiAffinity",
            Y::map([(
                "preferredDuringSchedulingIgnoredDuringExecution",
                Y::List(vec![Y::map([
                    ("weight", Y::Int(100)),
                    (
                        "podAffinityTerm",
                        Y::map([
                            ("topologyKey", Y::str("kubernetes.io/hostname")),
                            (
                                "labelSelector",
                                Y::map([("matchLabels", Y::map([(INSTANCE_LABEL, Y::str(&self.name))]))]),
                            ),
                        ]),
                    ),
                ])]),
            )]),
        )])
    }

    /// The pods' labels, and Prometheus's scrape annotations when the load serves metrics (the
    /// convention Prometheus's Kubernetes example configuration and most charts follow).
    fn pod_metadata(&self, labels: Y) -> Y {
        let mut entries = vec![("labels", labels)];
        if let Some(port) = self.metrics_port {
            let annotations = Y::map([
                ("prometheus.io/scrape", Y::str("true")),
                ("prometheus.io/port", Y::str(&port.to_string())),
                ("prometheus.io/path", Y::str("/metrics")),
            ]);
            entries.push(("annotations", annotations));
        }
        Y::Map(entries)
    }

    /// The container every segment runs.
    fn container(&self) -> Y {
        let mut entries = self.container_base();
        if let Some(port) = self.metrics_port {
            let metrics = Y::map([("name", Y::str("metrics")), ("containerPort", Y::Int(u64::from(port)))]);
            entries.push(("ports", Y::List(vec![metrics])));
        }
        Y::Map(entries)
    }

    /// The container without its ports.
    fn container_base(&self) -> Vec<(&'static str, Y)> {
        vec![
            ("name", Y::str("strain")),
            ("image", Y::str(&self.image)),
            // The image's entrypoint is strain; Kubernetes sets JOB_COMPLETION_INDEX in every
            // pod of an Indexed Job, which is how --segments finds its share.
            ("args", Y::List(self.args.iter().map(|a| Y::str(a)).collect())),
            (
                "resources",
                // No CPU limit: CFS throttling would stall the generator mid-request and show
                // up as latency. The memory limit makes a runaway pod fail alone.
                Y::map([
                    ("requests", Y::map([("cpu", Y::str(&self.cpu)), ("memory", Y::str(&self.memory))])),
                    ("limits", Y::map([("memory", Y::str(&self.memory))])),
                ]),
            ),
            (
                "securityContext",
                Y::map([
                    ("allowPrivilegeEscalation", Y::Bool(false)),
                    ("readOnlyRootFilesystem", Y::Bool(true)),
                    ("runAsNonRoot", Y::Bool(true)),
                    ("runAsUser", Y::Int(RUN_AS_USER)),
                    ("capabilities", Y::map([("drop", Y::List(vec![Y::str("ALL")]))])),
                ]),
            ),
        ]
    }
}

/// Checks the load the segments run (the strain arguments after `--`) with strain's own parser,
/// and returns how long it lasts, its timeout included, and the port of `--metrics-listen`.
fn check_load(args: &[String]) -> Result<(Duration, Option<u16>), CliError> {
    let usage = |msg: String| Err(CliError::Usage(msg));
    if args.is_empty() {
        return usage("give the load after --: strain k8s-job --segments N --image IMAGE -- [OPTIONS] <URL>".into());
    }
    let own = args.iter().take_while(|a| *a != "--");
    for arg in own {
        for (flag, why) in REFUSED {
            if arg == flag || arg.strip_prefix(flag).is_some_and(|rest| rest.starts_with('=')) {
                return usage(format!("{flag} is not allowed after k8s-job's --: {why}"));
            }
        }
    }
    let cli = Cli::try_parse_from(std::iter::once("strain").chain(args.iter().map(String::as_str)))
        .map_err(|e| CliError::Usage(format!("the strain arguments after --: {}", one_line(&e.to_string()))))?;
    if cli.command.is_some() {
        return usage(format!("k8s-job runs a load on a URL (strain [OPTIONS] <URL>), not `strain {}`", args[0]));
    }
    let Some(url) = cli.load.url.as_deref() else { return usage("the strain arguments after -- need a URL".into()) };
    Target::parse(url)?;
    let length = match &cli.load.run.length.stages {
        Some(stages) => stages.0.iter().map(|s| s.duration).sum(),
        None => cli.load.run.length.duration.map_or(crate::defaults::DURATION, |d| d.0),
    };
    let metrics = cli.load.run.metrics.metrics_listen;
    if let Some(addr) = metrics.filter(|a| a.ip().is_loopback() || a.port() == 0) {
        return usage(format!(
            "--metrics-listen {addr} cannot be scraped in a pod: listen on 0.0.0.0:PORT (a fixed port), e.g. 0.0.0.0:9464"
        ));
    }
    Ok((length + cli.load.connect.timeout.0, metrics.map(|a| a.port())))
}

/// Whether `s` is a DNS-1123 label, as Kubernetes requires of a Job's name.
fn is_dns_label(s: &str) -> bool {
    let ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            bytes.len() <= 63 && ok(first) && ok(last) && bytes.iter().all(|&b| ok(b) || b == b'-')
        }
        _ => false,
    }
}

/// Whether `s` is a non-negative Kubernetes resource quantity: a decimal number and an optional
/// binary (Ki..Ei) or decimal (m, k, M..E) suffix or exponent.
fn is_quantity(s: &str) -> bool {
    let s = s.strip_prefix('+').unwrap_or(s);
    let number_end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    let digits = number.replace('.', "");
    if digits.is_empty() || number.matches('.').count() > 1 {
        return false;
    }
    const SUFFIXES: [&str; 14] = ["", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if SUFFIXES.contains(&suffix) {
        return true;
    }
    let Some(exp) = suffix.strip_prefix(['e', 'E']) else { return false };
    let exp = exp.strip_prefix(['+', '-']).unwrap_or(exp);
    !exp.is_empty() && exp.bytes().all(|b| b.is_ascii_digit())
}

/// `t` rounded up to a whole second, so the printed start is never before the asked delay.
fn whole_second_after(t: SystemTime) -> SystemTime {
    let since = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    SystemTime::UNIX_EPOCH + Duration::from_secs(ceil_secs(since))
}

/// `d` in seconds, rounded up.
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests;
