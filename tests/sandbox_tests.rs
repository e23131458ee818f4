//! Hostile programs under replay: each reaches its target only after its hostile
//! action, so the verdict must still be right, the action contained, and nothing left behind.

mod common;
use common::*;
use std::time::{Duration, Instant};

fn reach(name: &str, body: &str) -> serde_json::Value {
    let src = format!(
        "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n#include <signal.h>\n\
         #include <fcntl.h>\n#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>\n\
         #include <sys/prctl.h>\n#include <sys/ptrace.h>\n\
         extern void reach_error(void);\n\
         void f(int x) {{\n{body}\n  if (x == 3) reach_error();\n}}\n"
    );
    let args = ["--function", "f", "--call", "reach_error", "--timeout", "20"];
    let r = analyse(name, &src, &args);
    // The same program in the unprivileged mode (the tool run as nobody): the same verdict.
    if let Some(u) = analyse_as_nobody(name, &src, &args) {
        assert_eq!(u["verdict"], r["verdict"], "unprivileged mode: {u:#}");
    }
    r
}

/// Whether the unprivileged mode can be tested: the test runs as root and has `setpriv`.
fn can_run_as_nobody() -> bool {
    let ok = unsafe { libc::geteuid() } == 0
        && std::process::Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("unprivileged mode skipped: needs root and setpriv");
    }
    ok
}

/// `src` as `<dir>/<name>.c` in a fresh directory that `nobody` can read and write.
fn nobody_program(name: &str, src: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let c = dir.path().join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    std::fs::set_permissions(&c, std::fs::Permissions::from_mode(0o644)).unwrap();
    (dir, c)
}

/// `setpriv` running what follows as `nobody`, with temporary files in `tmp`.
fn as_nobody(tmp: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).env("TMPDIR", tmp);
    cmd
}

/// Runs the tool as `nobody` (through `setpriv`) when the test runs as root; `None` otherwise.
fn analyse_as_nobody(name: &str, src: &str, args: &[&str]) -> Option<serde_json::Value> {
    if !can_run_as_nobody() {
        return None;
    }
    let (dir, c) = nobody_program(name, src);
    let out = sanitizer_env(&mut as_nobody(dir.path()))
        .args(apc_llvm_argv())
        .arg(&c)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("as nobody: {}", String::from_utf8_lossy(&out.stderr)));
    // Also after the report (e.g. an AddressSanitizer report at exit, APC_LLVM_TEST_BIN).
    assert!(out.status.success(), "as nobody: {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    // Nothing left behind in its temporary directory but the program itself.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).filter(|n| n.to_string_lossy() != format!("{name}.c")).collect();
    assert!(left.is_empty(), "as nobody, left behind: {left:?}");
    Some(v)
}

#[test]
fn no_network_not_even_loopback() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let r = reach(
        "net",
        &format!(
            "  int s = socket(AF_INET, SOCK_STREAM, 0);\n  struct sockaddr_in a = {{0}}; a.sin_family = AF_INET; a.sin_port = htons({port});\n  \
             a.sin_addr.s_addr = htonl(0x7f000001);\n  if (s >= 0) connect(s, (struct sockaddr *)&a, sizeof a);"
        ),
    );
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!(listener.accept().is_err(), "the replayed program connected to the test's listener");
}

#[test]
fn secrets_are_out_of_sight() {
    // Reached only when the environment is empty and the host's files are invisible.
    let src = "#include <stdio.h>\n#include <stdlib.h>\nextern char **environ;\nextern void reach_error(void);\n\
               void f(int x) { if (x == 3 && (!environ || !environ[0]) && !getenv(\"HOME\") && !fopen(\"/etc/passwd\", \"r\")\n\
               && !fopen(\"/proc/self/environ\", \"r\")) reach_error(); }";
    let args = ["--function", "f", "--call", "reach_error", "--timeout", "20"];
    let r = analyse("secret", src, &args);
    assert_eq!(r["verdict"], "reachable", "the run saw a secret: {r:#}");
    if let Some(u) = analyse_as_nobody("secret", src, &args) {
        assert_eq!(u["verdict"], "reachable", "unprivileged, the run saw a secret: {u:#}");
    }
}

#[test]
fn kill_everything_hits_only_the_run() {
    let r = reach("killall", "  kill(-1, SIGKILL);");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn a_lingering_setsid_grandchild_neither_blocks_nor_survives() {
    let name = format!("apclinger{}", std::process::id() % 100000);
    let start = Instant::now();
    let r = reach(
        "linger",
        &format!("  if (fork() == 0) {{ setsid(); prctl(PR_SET_NAME, \"{name}\"); for (int i = 0; i < 60; i++) sleep(1); _exit(0); }}"),
    );
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!(start.elapsed() < Duration::from_secs(20), "the grandchild held the tool up: {:?}", start.elapsed());
    std::thread::sleep(Duration::from_millis(200));
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .filter(|c| c.trim() == name)
        .collect();
    assert!(survivors.is_empty(), "a replayed process survived the run: {survivors:?}");
}

#[test]
fn an_inherited_descriptor_does_not_lead_out() {
    let marker = format!("apc-fd-escape-{}", std::process::id());
    let src = format!(
        "#include <stdio.h>\n#include <unistd.h>\nextern void reach_error(void);\n\
         void f(int x) {{ for (int fd = 3; fd < 64; fd++) if (fchdir(fd) == 0) {{ FILE *o = fopen(\"{marker}\", \"w\"); if (o) fclose(o); }}\n\
         if (x == 3) reach_error(); }}"
    );
    let p = c_program("fdesc", &src);
    // The tool starts with a directory open on fd 9, not close-on-exec (as a careless caller
    // might leave it).
    let out = sanitizer_env(&mut std::process::Command::new("sh"))
        .arg("-c")
        .arg("exec 9</tmp; exec \"$@\" --function f --call reach_error --json --timeout 20")
        .arg("sh")
        .args(apc_llvm_argv())
        .arg(&p.path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    let escaped = std::path::Path::new("/tmp").join(&marker);
    let existed = escaped.exists();
    let _ = std::fs::remove_file(&escaped);
    assert!(!existed, "the run wrote {} through an inherited descriptor", escaped.display());
    // The same as nobody (the unprivileged mode), where /tmp is writable to the run's user.
    if can_run_as_nobody() {
        let (dir, c) = nobody_program("fdesc", &src);
        let out = sanitizer_env(&mut as_nobody(dir.path()))
            .args(["sh", "-c", "exec 9</tmp; exec \"$@\" --function f --call reach_error --json --timeout 20", "sh"])
            .args(apc_llvm_argv())
            .arg(&c)
            .output()
            .unwrap();
        let u: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        assert!(out.status.success(), "as nobody: {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
        assert_eq!(u["verdict"], "reachable", "{u:#}");
        let existed = escaped.exists();
        let _ = std::fs::remove_file(&escaped);
        assert!(!existed, "unprivileged, the run wrote {} through an inherited descriptor", escaped.display());
    }
}

#[test]
fn a_forged_hit_message_is_no_hit() {
    // The program writes what an old marker wrote, then never enters the target.
    // (`getpid` is opaque to the analysis, so the exit does not make the target dead code.)
    let src = "#include <unistd.h>\nextern void reach_error(void);\n\
               void f(int x) { if (x == 3) { (void)!write(3, \"hit 0\\n\", 6); (void)!write(3, \"hit 0000000000000000 0\\n\", 23);\n\
               if (getpid() > 0) _exit(0); }\n\
               if (x == 3) reach_error(); }";
    let args = ["--function", "f", "--call", "reach_error", "--timeout", "10", "--engine", "apc"];
    let r = analyse("forge", src, &args);
    assert_ne!(r["verdict"], "reachable", "a forged hit was believed: {r:#}");
    assert_eq!(r["witness"]["reached"], false, "{r:#}");
    if let Some(u) = analyse_as_nobody("forge", src, &args) {
        assert_ne!(u["verdict"], "reachable", "unprivileged, a forged hit was believed: {u:#}");
    }
}

#[test]
fn a_program_cannot_trace_its_supervisor() {
    let r = reach("ptrace", "  if (ptrace(PTRACE_ATTACH, getppid(), 0, 0) == 0) { kill(getppid(), SIGKILL); _exit(9); }");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn forking_many_times_is_bounded() {
    let start = Instant::now();
    let r = reach("forks", "  for (int i = 0; i < 1000; i++) if (fork() == 0) { sleep(30); _exit(0); }");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!(start.elapsed() < Duration::from_secs(20));
}

/// The unprivileged mode (the tool not run as root): the run gets user, pid and network
/// namespaces of its own. Run as `nobody` through `setpriv` when the test runs as root.
#[test]
fn unprivileged_mode_contains_the_same_programs() {
    if !can_run_as_nobody() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let src = format!(
        "#include <signal.h>\n#include <sys/socket.h>\n#include <netinet/in.h>\n#include <arpa/inet.h>\n#include <stdio.h>\n\
         extern void reach_error(void);\n\
         void f(int x) {{ kill(-1, SIGKILL);\n\
         int s = socket(AF_INET, SOCK_STREAM, 0); struct sockaddr_in a = {{0}}; a.sin_family = AF_INET; a.sin_port = htons({port});\n\
         a.sin_addr.s_addr = htonl(0x7f000001); if (s >= 0) connect(s, (struct sockaddr *)&a, sizeof a);\n\
         FILE *o = fopen(\"/tmp/apc-unpriv-escape\", \"w\"); if (o) fclose(o);\n\
         if (x == 3) reach_error(); }}\n"
    );
    let _ = std::fs::remove_file("/tmp/apc-unpriv-escape");
    let r = analyse_as_nobody("unpriv", &src, &["--function", "f", "--call", "reach_error", "--timeout", "20"]).expect("checked above");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert!(listener.accept().is_err(), "the unprivileged run connected to the test's listener");
    assert!(!std::path::Path::new("/tmp/apc-unpriv-escape").exists(), "the unprivileged run wrote outside its directory");
}

/// SIGTERM or SIGINT during a replay: the tool ends at once, the replayed program with it, and
/// no temporary file is left.
#[test]
fn interrupted_runs_leave_nothing_behind() {
    for (sig, name) in [(libc::SIGTERM, "term"), (libc::SIGINT, "int")] {
        let comm = format!("apcsig{name}{}", std::process::id() % 10000);
        let src = format!(
            "#include <unistd.h>\n#include <sys/prctl.h>\nextern void reach_error(void);\n\
             void f(int x) {{ if (x == 3) {{ prctl(PR_SET_NAME, \"{comm}\"); sleep(60); reach_error(); }} }}\n"
        );
        let p = c_program(name, &src);
        let tmp = tempfile::tempdir().unwrap();
        let child = apc_llvm_command()
            .arg(&p.path)
            .args(["--function", "f", "--call", "reach_error", "--timeout", "60"])
            .env("TMPDIR", tmp.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the replay runs.
        let running = |comm: &str| {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| e.ok())
                .any(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == comm))
        };
        let start = Instant::now();
        while !running(&comm) && start.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(running(&comm), "the replay never started");
        unsafe { libc::kill(child.id() as i32, sig) };
        let sent = Instant::now();
        let out = child.wait_with_output().unwrap();
        let status = out.status;
        assert!(sent.elapsed() < Duration::from_secs(3), "the tool took {:?} to stop", sent.elapsed());
        assert_eq!(
            std::os::unix::process::ExitStatusExt::into_raw(status) >> 8,
            128 + sig,
            "{status:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The namespaces are torn down by the kernel; give it a moment on a loaded machine.
        let gone = Instant::now();
        while running(&comm) && gone.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!running(&comm), "the replayed program outlived the tool");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
    }
}

/// The reader of the report and of the log has gone (`apc-llvm -v … 2>&1 | head -1`): the
/// analysis ends normally, with the verdict's status, and leaves no temporary file (a failed
/// log write once panicked twice and aborted, leaving the load's directory).
#[test]
fn a_closed_output_ends_the_run_normally_and_leaves_nothing() {
    let p = c_program("closed", "extern void reach_error(void);\nvoid f(const char *s) { if (s[0] == 'a' && s[1] == 'b') reach_error(); }\n");
    let tmp = tempfile::tempdir().unwrap();
    let mut child = apc_llvm_command()
        .arg(&p.path)
        .args(["--function", "f", "--call", "reach_error", "--timeout", "20", "-v"])
        .env("TMPDIR", tmp.path())
        .env("RUST_LOG", "apc_llvm=debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Both readers go before anything is written.
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn filling_the_disk_is_bounded() {
    // Writes as much as it can, in many files; reaches the target only if it was stopped well
    // before 64 MiB and could not overwrite its own executable.
    let r = reach(
        "disk",
        "  static char buf[65536]; memset(buf, 'x', sizeof buf); long total = 0;\n  \
         for (int k = 0; k < 200; k++) { char name[32]; snprintf(name, sizeof name, \"f%d\", k);\n  \
           FILE *o = fopen(name, \"w\"); if (!o) break;\n  \
           for (int i = 0; i < 64; i++) { size_t n = fwrite(buf, 1, sizeof buf, o); total += (long)n; if (n != sizeof buf) break; }\n  \
           fclose(o); }\n  FILE *r = fopen(\"/prog\", \"w\");\n  if (r || total >= (64l << 20)) return;",
    );
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

/// `--call F` means "F is called": the marker sits right before the call, so a run that dies
/// earlier in the same block never counts as a hit.
#[test]
fn a_call_target_is_hit_only_when_the_call_executes() {
    let src = "#include <signal.h>\nextern void reach_error(void);\n\
               void f(int x) { if (x == 3) { raise(SIGKILL); reach_error(); } }";
    let r = analyse("callkill", src, &["--function", "f", "--call", "reach_error", "--timeout", "5", "--engine", "apc"]);
    assert_ne!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["run"], "signal 9", "{r:#}");
    let live = "#include <signal.h>\nextern void reach_error(void);\n\
                void f(int x) { if (x == 3) { raise(SIGCHLD); reach_error(); } }";
    let r = analyse("calllive", live, &["--function", "f", "--call", "reach_error", "--timeout", "5", "--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn a_long_trace_does_not_hide_the_hit() {
    // A million nondet calls (about 9 MB of trace, past what is kept), then the target.
    let src = "extern int __VERIFIER_nondet_int(void);\nextern void reach_error(void);\n\
               int main(void) { int s = 0; for (int i = 0; i < 1000000; i++) s += __VERIFIER_nondet_int() & 1;\n\
               if (s == 0) reach_error(); return 0; }";
    let r = analyse("longtrace", src, &["--function", "main", "--call", "reach_error", "--timeout", "30", "--engine", "apc"]);
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

#[test]
fn closing_descriptor_3_does_not_lose_the_hit() {
    let r = reach("close3", "  close(3);");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
}

/// The replay program is its own init (it forks the run; the analyser's copy is gone after
/// `execve`): the run can neither kill that init nor forge its status through the init's pipe.
#[test]
fn the_run_cannot_kill_its_init_or_forge_its_status() {
    let r = reach("init", "  if (x == 3) { kill(1, SIGKILL); kill(getppid(), SIGKILL); (void)!write(6, \"\\0\\0\\0\\0\", 4); }");
    assert_eq!(r["verdict"], "reachable", "{r:#}");
    assert_eq!(r["witness"]["run"], "exit 0", "{r:#}");
}

/// Runs repeat: the same program sees the same stack, heap and code addresses in every run
/// (address randomisation is off), so a fuzzing session with a fixed seed and a replay of a
/// program that reads past its inputs give the same answer each time.
#[test]
fn every_run_sees_the_same_addresses() {
    use apc_llvm::replay::sandbox::{execute, Job, Limits};
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("addr.c");
    std::fs::write(
        &c,
        "#include <stdio.h>\n#include <stdlib.h>\n\
         int main(void) { int local; char *heap = malloc(100); \
         dprintf(3, \"%p %p %p\\n\", (void *)&local, (void *)heap, (void *)main); return 0; }\n",
    )
    .unwrap();
    let jail = dir.path().join("jail");
    std::fs::create_dir_all(jail.join("work")).unwrap();
    let cc = std::process::Command::new("clang-19").args(["-static", "-O1", "-o"]).arg(jail.join("prog")).arg(&c).output().unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    let run = || {
        let exit = execute(&Job::new(&jail, "prog", Limits::default())).unwrap();
        assert_eq!(exit.status, "exit 0");
        String::from_utf8(exit.trace).unwrap()
    };
    let first = run();
    assert_eq!(first.split_whitespace().count(), 3, "{first}");
    for _ in 0..3 {
        assert_eq!(run(), first);
    }
}

/// A victim directory (mode 0700) holding a secret file (0600), owned by `uid`: what a hostile
/// program's planted links point at. Returns the directory and its entries' contents.
fn victims(uid: u32) -> (tempfile::TempDir, Vec<(String, Vec<u8>)>) {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let files = vec![("secret".to_string(), b"top secret\n".to_vec()), ("keep".to_string(), b"keep me\n".to_vec())];
    for (name, bytes) in &files {
        let p = d.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
    }
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(d.path(), Some(uid), Some(uid)).unwrap();
    (d, files)
}

/// The victims are as they were: the same entries, the same contents.
fn assert_untouched(dir: &std::path::Path, files: &[(String, Vec<u8>)], how: &str) {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut want: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
    want.sort();
    assert_eq!(names, want, "{how}: the victim directory changed");
    for (name, bytes) in files {
        assert_eq!(&std::fs::read(dir.join(name)).unwrap(), bytes, "{how}: {name} changed");
    }
}

/// A program that, from a constructor and then from a thread all along the fuzzing, plants
/// links to `file` and `dir` in every directory it can write, under the names the tool reads
/// (corpus entries, artifacts, the traced input, a fed seed). With `swap_dirs`, the thread
/// also replaces the corpus, artifact and input directories themselves with links to `dir`
/// once libFuzzer runs, and an input kills the fuzzer (so that the tool reads what is there
/// and restarts it, again and again, until the deadline).
fn planting_program(file: &std::path::Path, dir: &std::path::Path, swap_dirs: bool) -> String {
    format!(
        r#"#include <stdio.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
extern void reach_error(void);
static const char *dirs[] = {{".", "/", "/work", "corpus", "art", "t", "/work/corpus", "/work/art", "/work/t", "/corpus", "/art", "/t", 0}};
static const char *names[] = {{"crash-0000", "crash-ffff", "leak-0", "timeout-0", "oom-0", "seed-0001", "fill-0002", "prev-0003", "input", "live", "live-0001", "evil", 0}};
static void plant(void) {{
  char p[512];
  for (int i = 0; dirs[i]; i++) {{
    for (int k = 0; names[k]; k++) {{
      snprintf(p, sizeof p, "%s/%s", dirs[i], names[k]);
      unlink(p); (void)!symlink("{file}", p);
    }}
    snprintf(p, sizeof p, "%s/dirlink", dirs[i]); (void)!symlink("{dir}", p);
  }}
}}
static void swap(void) {{
  char q[512];
  for (int i = 3; dirs[i]; i++) {{
    snprintf(q, sizeof q, "%s.old%d", dirs[i], getpid());
    if (rename(dirs[i], q) == 0 || unlink(dirs[i]) == 0) (void)!symlink("{dir}", dirs[i]);
  }}
}}
static void *again(void *arg) {{ (void)arg; for (int n = 0;; n++) {{ plant(); if ({swap} && n >= 50) swap(); usleep(2000); }} return 0; }}
__attribute__((constructor)) static void start(void) {{ plant(); pthread_t t; pthread_create(&t, 0, again, 0); }}
void f(int x) {{
  if ({swap} && x == 7) raise(SIGKILL);
  if (x == 3 && (!{swap} || x * x == 10)) reach_error();
}}
"#,
        file = file.display(),
        dir = dir.display(),
        swap = i32::from(swap_dirs),
    )
}

/// Links a fuzzed program plants where the tool reads, writes and removes (its corpus, its
/// artifacts, the traced input, the directories themselves) lead nowhere: a victim file and
/// directory outside the jail stay as they were, as root and in the unprivileged mode.
#[test]
fn fuzzing_never_follows_a_planted_link() {
    for swap in [false, true] {
        let (dir, files) = victims(0);
        let src = planting_program(&dir.path().join("secret"), dir.path(), swap);
        let args = ["--function", "f", "--call", "reach_error", "--engine", "fuzz", "--timeout", "6"];
        let r = analyse("plant", &src, &args);
        assert_untouched(dir.path(), &files, "as root");
        if !swap {
            // The links planted beside its corpus do not stop the fuzzer.
            assert_eq!(r["verdict"], "reachable", "{r:#}");
        }
        if can_run_as_nobody() {
            let (dir, files) = victims(65534);
            let src = planting_program(&dir.path().join("secret"), dir.path(), swap);
            let u = analyse_as_nobody("plant", &src, &args).expect("checked above");
            assert_untouched(dir.path(), &files, "as nobody");
            if !swap {
                assert_eq!(u["verdict"], "reachable", "as nobody: {u:#}");
            }
        }
    }
}

/// The fuzzed program sees nothing of the tool's environment: not in its own, nor through a
/// link to the tool's `/proc/self/environ` planted where the tool reads and writes back.
#[test]
fn fuzzing_sees_no_environment() {
    let src = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
extern char **environ;
extern void reach_error(void);
static int holds_secret(const char *path) {
  static char buf[1 << 16];
  FILE *f = fopen(path, "r"); if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f); fclose(f);
  for (size_t i = 0; i + 15 <= n; i++) if (memcmp(buf + i, "APC_JAIL_SECRET", 15) == 0) return 1;
  return 0;
}
static int leaked(void) {
  if ((environ && environ[0]) || getenv("APC_JAIL_SECRET") || getenv("HOME")) return 1;
  const char *dirs[] = {"/work/corpus", "/work/t", "/work/art", "/corpus", "/t", "/art", 0};
  for (int i = 0; dirs[i]; i++) {
    DIR *d = opendir(dirs[i]); if (!d) continue;
    struct dirent *e; char p[512];
    while ((e = readdir(d))) { snprintf(p, sizeof p, "%s/%s", dirs[i], e->d_name); if (holds_secret(p)) { closedir(d); return 1; } }
    closedir(d);
  }
  return 0;
}
__attribute__((constructor)) static void plant(void) {
  const char *links[] = {"/work/corpus/env", "/work/art/crash-env", "/work/t/input", "/corpus/env", "/art/crash-env", "/t/input", 0};
  for (int i = 0; links[i]; i++) { unlink(links[i]); (void)!symlink("/proc/self/environ", links[i]); }
}
void f(int x) { if (leaked()) reach_error(); }
"#;
    let p = c_program("env", src);
    let out = apc_llvm_with_env(
        &[p.path.to_str().unwrap(), "--function", "f", "--call", "reach_error", "--engine", "fuzz", "--timeout", "6", "--json"],
        &[("APC_JAIL_SECRET", "s3cr3t-value")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(r["verdict"], "reachable", "the fuzzed program saw the tool's environment: {r:#}");
}

/// A fuzzed program that writes all it can is stopped at its tmpfs's size (64 MiB), and
/// reaches its target only then: in a directory without a limit it writes 128 MiB.
#[test]
fn fuzzing_cannot_fill_the_disk() {
    let src = r#"#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
extern void reach_error(void);
/* Fills the disk once per process (the driver resets globals between inputs, not files):
   the total it managed is kept in a file. */
static long filled(void) {
  long total = 0;
  int m = open("filled", O_RDONLY);
  if (m >= 0) { (void)!read(m, &total, sizeof total); close(m); return total; }
  static char buf[1 << 20]; memset(buf, 'x', sizeof buf);
  int k = 0;
  for (; k < 128; k++) {
    char name[32]; snprintf(name, sizeof name, "fill%d", k);
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644); if (fd < 0) break;
    long w = write(fd, buf, sizeof buf); close(fd);
    if (w > 0) total += w;
    if (w != (long)sizeof buf) break;
  }
  for (int j = 0; j <= k; j++) { char name[32]; snprintf(name, sizeof name, "fill%d", j); unlink(name); }
  m = open("filled", O_WRONLY | O_CREAT, 0644); if (m >= 0) { (void)!write(m, &total, sizeof total); close(m); }
  return total;
}
void f(int x) { long t = filled(); if (x == 3 && t >= (16l << 20) && t <= (64l << 20)) reach_error(); }
"#;
    let r = analyse("fill", src, &["--function", "f", "--call", "reach_error", "--engine", "fuzz", "--timeout", "20"]);
    assert_eq!(r["verdict"], "reachable", "the fuzzed program was not stopped at its tmpfs's size: {r:#}");
}

/// SIGTERM while the fuzzer runs (or while it is built): the tool exits with 143, prints no
/// report, and leaves no temporary file and no process, every time.
#[test]
fn sigterm_during_fuzzing_ends_with_143_and_no_report() {
    let comm = format!("apcfz{}", std::process::id() % 100000);
    // The target is hard to reach (a hash): the fuzzer runs until the signal.
    let src = format!(
        "#include <sys/prctl.h>\nextern void reach_error(void);\n\
         __attribute__((constructor)) static void name(void) {{ prctl(PR_SET_NAME, \"{comm}\"); }}\n\
         void f(unsigned x) {{ unsigned h = x; for (int i = 0; i < 8; i++) h = (h ^ (h >> 13)) * 2654435761u; if (h == 0x1234567u) reach_error(); }}\n"
    );
    let p = c_program("sigfuzz", &src);
    let running = |comm: &str| {
        std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()).any(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == comm))
    };
    for k in 0..6u64 {
        let tmp = tempfile::tempdir().unwrap();
        let child = apc_llvm_command()
            .arg(&p.path)
            .args(["--function", "f", "--call", "reach_error", "--engine", "fuzz", "--timeout", "30", "--json"])
            .env("TMPDIR", tmp.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Once the tool runs (its first temporary directory is there: before `main` a signal
        // has its default action), at different points: while loading, building, at the
        // fuzzer's start, while it runs.
        let start = Instant::now();
        while std::fs::read_dir(tmp.path()).unwrap().next().is_none() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(50 + 250 * k));
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let sent = Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(sent.elapsed() < Duration::from_secs(3), "the tool took {:?} to stop", sent.elapsed());
        assert_eq!(out.status.code(), Some(143), "run {k}: {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.is_empty(), "run {k}: a report after SIGTERM: {}", String::from_utf8_lossy(&out.stdout));
        let gone = Instant::now();
        while running(&comm) && gone.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!running(&comm), "run {k}: the fuzzed program outlived the tool");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        assert!(left.is_empty(), "run {k}: temporary files left: {left:?}");
    }
}
