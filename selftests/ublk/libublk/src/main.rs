//! libublk_serve: a ublk server on the published libublk crate (0.4.8), for
//! the ublk/libublk-* tests (selftests/ublk/libublk.sh). The crate's own
//! control and queue code -- not ours -- talks to the ublk driver, so the
//! tests see whether a client library written by the ublk authors works on
//! this kernel: plain copies, UBLK_F_SUPPORT_ZERO_COPY with the crate's
//! REGISTER_IO_BUF/UNREGISTER_IO_BUF commands, UBLK_F_AUTO_BUF_REG (the
//! buffer descriptor in the SQE's own addr field), its fallback
//! (UBLK_IO_F_NEED_REG_BUF) and UBLK_F_USER_RECOVERY.
//!
//! stdout: "ADDED <id>" once ADD_DEV returned, "FLAGS 0x<flags>" (the
//! device's flags as the kernel returned them) and "READY <id>" once the
//! device is live, "DONE ios=... need_reg_buf=..." after a clean stop.
//! Errors go to stderr, naming the step and the errno; exit 1.

mod queue;

use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::io::UblkDev;
use libublk::{sys, UblkError, UblkFlags};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Target {
    Null,
    Loop,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// data through the server's own buffers, no buffer flags
    Copy,
    /// UBLK_F_SUPPORT_ZERO_COPY: the server registers each request's buffer
    Zc,
    /// UBLK_F_AUTO_BUF_REG: the driver registers it at index tag
    Auto,
    /// UBLK_F_AUTO_BUF_REG with UBLK_AUTO_BUF_REG_FALLBACK, asking for a
    /// slot past the table for half the requests (UBLK_IO_F_NEED_REG_BUF);
    /// the server registers those itself, so SUPPORT_ZERO_COPY too
    AutoFallback,
}

impl Mode {
    fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "copy" => Mode::Copy,
            "zc" => Mode::Zc,
            "auto" => Mode::Auto,
            "auto-fallback" => Mode::AutoFallback,
            _ => return None,
        })
    }

    /// the UBLK_F_* flags this mode needs from the driver
    fn flags(self) -> u64 {
        let zc = sys::UBLK_F_SUPPORT_ZERO_COPY as u64;
        let auto = sys::UBLK_F_AUTO_BUF_REG as u64;
        match self {
            Mode::Copy => 0,
            Mode::Zc => zc,
            Mode::Auto => auto,
            Mode::AutoFallback => auto | zc,
        }
    }
}

/// What a queue thread needs to know (copied into each one).
#[derive(Clone, Copy, Debug)]
pub struct QueueConf {
    pub target: Target,
    pub mode: Mode,
    pub dev_id: u32,
}

/// Fixed-file index of the backing file in every queue's ring (0 is
/// /dev/ublkcN, registered by the crate).
pub const BACKING_FIXED: u32 = 1;

struct Opts {
    target: Target,
    backing: Option<String>,
    mode: Mode,
    queues: u16,
    depth: u16,
    size: Option<u64>,
    recover: Option<u32>,
    recovery: bool,
    probe_absent: bool,
}

const PROG: &str = "libublk_serve";
const IO_BUF_BYTES: u32 = 512 << 10;
const NULL_DEFAULT_SIZE: u64 = 256 << 20;

fn usage() -> String {
    format!(
        "usage: {PROG} --target null|loop [--backing FILE] [--mode copy|zc|auto|auto-fallback]
                     [--queues N] [--depth D] [--size BYTES] [--recovery | --recover ID]

A ublk server on the libublk crate (0.4.8). Adds /dev/ublkbID (or recovers
device ID), prints 'READY ID' once it is live and serves it until the device
is stopped or deleted, or SIGTERM/SIGINT stops it (the server then deletes it).

  --target T     null: completes every request, no data; loop: --backing FILE
  --backing FILE the loop target's regular file (O_DIRECT when it opens so,
                 else buffered); the device has its size (rounded down to 4 KiB)
  --mode M       copy: data through the server's buffers (no buffer flags)
                 zc: UBLK_F_SUPPORT_ZERO_COPY, REGISTER_IO_BUF/UNREGISTER_IO_BUF
                     around each request (READ_FIXED/WRITE_FIXED for loop)
                 auto: UBLK_F_AUTO_BUF_REG, the driver registers each request's
                     buffer at index tag
                 auto-fallback: UBLK_F_AUTO_BUF_REG|UBLK_F_SUPPORT_ZERO_COPY with
                     UBLK_AUTO_BUF_REG_FALLBACK; every second request of each tag
                     asks for index 0xffff (past the table), comes back with
                     UBLK_IO_F_NEED_REG_BUF and is registered by the server
                 (default copy)
  --queues N     hardware queues, 1..16 (default 1)
  --depth D      queue depth, 1..4096 (default 64)
  --size BYTES   null: device size (default 256 MiB; suffixes K, M, G)
  --recovery     add the device with UBLK_F_USER_RECOVERY
  --recover ID   take over device ID whose server died (START_USER_RECOVERY ..
                 END_USER_RECOVERY); --target, --backing and --mode must be the
                 first server's; queues and depth are the device's
  --probe-absent once live, send the control commands of ublk features this
                 kernel does not have (UPDATE_SIZE, QUIESCE_DEV) through the
                 crate and print 'PROBE update_size=R quiesce=R' (R: the result
                 or -errno)
  -h, --help     this text

stdout: 'ADDED ID' after ADD_DEV, 'FEATURES 0x..' (GET_FEATURES), 'FLAGS 0x..'
(the kernel's device flags) and 'READY ID' once live, 'DONE ios=N data=N need_reg_buf=N buf_cmds=N io_errors=N
failures=N queue_ios=N,.. signal=N' after a clean stop. Any ublk or io_uring
failure: a message on stderr naming the step and the errno, exit 1; a flag
the kernel does not grant is named and is a failure too.
"
    )
}

fn parse_size(s: &str) -> Option<u64> {
    let (num, shift) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 10),
        b'M' | b'm' => (&s[..s.len() - 1], 20),
        b'G' | b'g' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    num.parse::<u64>().ok()?.checked_mul(1u64 << shift)
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        target: Target::Null,
        backing: None,
        mode: Mode::Copy,
        queues: 1,
        depth: 64,
        size: None,
        recover: None,
        recovery: false,
        probe_absent: false,
    };
    let mut target = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "-h" | "--help" => {
                print!("{}", usage());
                std::process::exit(0);
            }
            "--target" => {
                target = Some(match val("--target")?.as_str() {
                    "null" => Target::Null,
                    "loop" => Target::Loop,
                    t => return Err(format!("unknown target '{t}' (null, loop)")),
                })
            }
            "--backing" => o.backing = Some(val("--backing")?),
            "--mode" => {
                let m = val("--mode")?;
                o.mode = Mode::parse(&m)
                    .ok_or_else(|| format!("unknown mode '{m}' (copy, zc, auto, auto-fallback)"))?;
            }
            "--queues" => {
                let v = val("--queues")?;
                o.queues = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=16).contains(n))
                    .ok_or_else(|| format!("--queues '{v}': want 1..16"))?;
            }
            "--depth" => {
                let v = val("--depth")?;
                o.depth = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=4096).contains(n))
                    .ok_or_else(|| format!("--depth '{v}': want 1..4096"))?;
            }
            "--size" => {
                let v = val("--size")?;
                o.size = Some(
                    parse_size(&v)
                        .filter(|s| *s >= 4096 && s % 4096 == 0)
                        .ok_or_else(|| format!("--size '{v}': want a multiple of 4 KiB"))?,
                );
            }
            "--recover" => {
                let v = val("--recover")?;
                o.recover = Some(
                    v.parse()
                        .map_err(|_| format!("--recover '{v}': not a device number"))?,
                );
            }
            "--recovery" => o.recovery = true,
            "--probe-absent" => o.probe_absent = true,
            _ => return Err(format!("unknown argument '{a}'")),
        }
    }
    o.target = target.ok_or("--target is required")?;
    match (o.target, &o.backing) {
        (Target::Loop, None) => return Err("--target loop needs --backing FILE".into()),
        (Target::Null, Some(_)) => return Err("--backing is for --target loop".into()),
        _ => {}
    }
    if o.target == Target::Loop && o.size.is_some() {
        return Err("--size is for --target null (loop: the file's size)".into());
    }
    if o.recover.is_some() && o.recovery {
        return Err("--recovery adds a device; --recover takes one over".into());
    }
    Ok(o)
}

/// A control command's result as a number: its value, or -errno
fn result_text(r: Result<i32, UblkError>) -> String {
    match r {
        Ok(v) => v.to_string(),
        Err(UblkError::UringIOError(e)) => e.to_string(),
        Err(e) => err_text(&e),
    }
}

/// "Invalid argument (-22)" for a crate error
pub fn err_text(e: &UblkError) -> String {
    match e {
        UblkError::UringIOError(r) | UblkError::OtherError(r) => errno_text(*r),
        UblkError::IOError(ioe) => match ioe.raw_os_error() {
            Some(n) => errno_text(-n),
            None => ioe.to_string(),
        },
        other => format!("{other} ({other:?})"),
    }
}

pub fn errno_text(res: i32) -> String {
    format!("{} ({})", std::io::Error::from_raw_os_error(-res), res)
}

fn flag_names(flags: u64) -> String {
    const NAMES: [(u64, &str); 5] = [
        (
            sys::UBLK_F_SUPPORT_ZERO_COPY as u64,
            "UBLK_F_SUPPORT_ZERO_COPY",
        ),
        (sys::UBLK_F_USER_RECOVERY as u64, "UBLK_F_USER_RECOVERY"),
        (sys::UBLK_F_AUTO_BUF_REG as u64, "UBLK_F_AUTO_BUF_REG"),
        (sys::UBLK_F_USER_COPY as u64, "UBLK_F_USER_COPY"),
        (sys::UBLK_F_NEED_GET_DATA as u64, "UBLK_F_NEED_GET_DATA"),
    ];
    let mut v: Vec<String> = Vec::new();
    let mut rest = flags;
    for (bit, name) in NAMES {
        if flags & bit != 0 {
            v.push(name.to_string());
            rest &= !bit;
        }
    }
    if rest != 0 {
        v.push(format!("0x{rest:x}"));
    }
    v.join("|")
}

fn fail(msg: String) -> ! {
    eprintln!("{PROG}: {msg}");
    let _ = std::io::stdout().flush();
    std::process::exit(1);
}

/// The loop target's backing file: opened O_DIRECT if it can be.
struct Backing {
    file: std::fs::File,
    direct: bool,
    size: u64,
}

fn open_backing(path: &str) -> Result<Backing, String> {
    let open = |flags: i32| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(flags)
            .open(path)
    };
    let (file, direct) = match open(libc::O_DIRECT) {
        Ok(f) => (f, true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            (open(0).map_err(|e| format!("open {path}: {e}"))?, false)
        }
        Err(e) => return Err(format!("open {path} (O_DIRECT): {e}")),
    };
    let md = file.metadata().map_err(|e| format!("fstat {path}: {e}"))?;
    if !md.is_file() {
        return Err(format!("{path}: not a regular file"));
    }
    let size = md.len() & !4095;
    if size == 0 {
        return Err(format!("{path}: smaller than 4 KiB"));
    }
    Ok(Backing { file, direct, size })
}

/// The signal that stopped the device (0: none).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

fn stop_signals() -> libc::sigset_t {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// SIGTERM, SIGINT, SIGHUP: STOP_DEV through a control handle of this
/// thread's own (the crate's control ring is per thread). The queues then
/// see UBLK_IO_RES_ABORT, run_target() returns, main deletes the device.
/// The signals are blocked in every other thread (the mask is inherited).
fn spawn_signal_thread(dev_id: u32) {
    std::thread::spawn(move || {
        let set = stop_signals();
        let mut sig: libc::c_int = 0;
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            return;
        }
        STOP_SIGNAL.store(sig, Ordering::SeqCst);
        eprintln!("{PROG}: signal {sig}: stopping ublk {dev_id} (STOP_DEV)");
        match UblkCtrl::new_simple(dev_id as i32) {
            Ok(c) => {
                if let Err(e) = c.kill_dev() {
                    eprintln!("{PROG}: STOP_DEV of ublk {dev_id}: {}", err_text(&e));
                }
            }
            Err(e) => eprintln!("{PROG}: control handle for ublk {dev_id}: {}", err_text(&e)),
        }
    });
}

/// None if `have` holds every flag of `want`, else what is missing
fn missing_flags(what: &str, have: u64, want: u64) -> Option<String> {
    let missing = want & !have;
    (missing != 0).then(|| {
        format!(
            "{what}: {} requested but not granted by this kernel ({what} flags 0x{have:x}: {})",
            flag_names(missing),
            flag_names(have)
        )
    })
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{PROG}: {msg}\n{}", usage());
            std::process::exit(2);
        }
    };

    // every thread started from here on inherits the blocked stop signals
    let set = stop_signals();
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };

    let backing = o
        .backing
        .as_ref()
        .map(|p| open_backing(p).unwrap_or_else(|m| fail(m)));
    let backing_fd: RawFd = backing.as_ref().map_or(-1, |b| b.file.as_raw_fd());
    let dev_size = match &backing {
        Some(b) => b.size,
        None => o.size.unwrap_or(NULL_DEFAULT_SIZE),
    };

    let mut want = o.mode.flags();
    if o.recovery || o.recover.is_some() {
        want |= sys::UBLK_F_USER_RECOVERY as u64;
    }
    // GET_FEATURES first: a flag the driver lacks is named before ADD_DEV
    let features = UblkCtrl::get_features()
        .unwrap_or_else(|| fail("GET_FEATURES failed (no ublk driver?)".into()));
    if let Some(m) = missing_flags("GET_FEATURES", features, want) {
        fail(m);
    }

    let ctrl = match o.recover {
        None => {
            let c = UblkCtrlBuilder::default()
                .name("libublk_serve")
                .id(-1)
                .nr_queues(o.queues)
                .depth(o.depth)
                .io_buf_bytes(IO_BUF_BYTES)
                .ctrl_flags(want)
                .dev_flags(UblkFlags::UBLK_DEV_F_ADD_DEV)
                .build()
                .unwrap_or_else(|e| {
                    fail(format!(
                        "ADD_DEV (flags 0x{want:x}: {}): {}",
                        flag_names(want),
                        err_text(&e)
                    ))
                });
            println!("ADDED {}", c.dev_info().dev_id);
            if let Some(m) = missing_flags("ADD_DEV", c.dev_info().flags, want) {
                // nothing serves it yet: DEL_DEV cannot wait on us
                if let Err(e) = c.del_dev() {
                    eprintln!(
                        "{PROG}: DEL_DEV of ublk {}: {}",
                        c.dev_info().dev_id,
                        err_text(&e)
                    );
                }
                fail(m);
            }
            c
        }
        Some(id) => {
            // the device's own geometry: the crate sizes its per-queue
            // tables from the builder's values
            let info = UblkCtrl::new_simple(id as i32)
                .unwrap_or_else(|e| fail(format!("GET_DEV_INFO of ublk {id}: {}", err_text(&e))))
                .dev_info();
            let c = UblkCtrlBuilder::default()
                .name("libublk_serve")
                .id(id as i32)
                .nr_queues(info.nr_hw_queues)
                .depth(info.queue_depth)
                .io_buf_bytes(info.max_io_buf_bytes)
                .dev_flags(UblkFlags::UBLK_DEV_F_RECOVER_DEV)
                .build()
                .unwrap_or_else(|e| {
                    fail(format!(
                        "recover ublk {id} (GET_DEV_INFO): {}",
                        err_text(&e)
                    ))
                });
            if let Some(m) = missing_flags("GET_DEV_INFO", c.dev_info().flags, want) {
                fail(m);
            }
            // the crate retries -EBUSY (old server still closing) for 30 s
            match c.start_user_recover() {
                Ok(r) if r >= 0 => {}
                Ok(r) => fail(format!(
                    "START_USER_RECOVERY of ublk {id}: {}",
                    errno_text(r)
                )),
                Err(e) => fail(format!(
                    "START_USER_RECOVERY of ublk {id}: {}",
                    err_text(&e)
                )),
            }
            c
        }
    };
    let info = ctrl.dev_info();
    let dev_id = info.dev_id;
    spawn_signal_thread(dev_id);

    let conf = QueueConf {
        target: o.target,
        mode: o.mode,
        dev_id,
    };
    let target = o.target;
    let tgt_init = move |dev: &mut UblkDev| -> Result<(), UblkError> {
        dev.set_default_params(dev_size);
        if target == Target::Loop {
            let p = &mut dev.tgt.params;
            // FUA reaches the server (RWF_DSYNC), FLUSH is an fdatasync
            p.basic.attrs |= sys::UBLK_ATTR_FUA;
            p.types |= sys::UBLK_PARAM_TYPE_DISCARD;
            p.discard.discard_granularity = 4096;
            p.discard.max_discard_sectors = u32::MAX >> 9;
            p.discard.max_write_zeroes_sectors = u32::MAX >> 9;
            p.discard.max_discard_segments = 1;
            let t = &mut dev.tgt;
            t.fds[BACKING_FIXED as usize] = backing_fd;
            t.nr_fds = BACKING_FIXED as i32 + 1;
        }
        Ok(())
    };
    let direct = backing.as_ref().is_some_and(|b| b.direct);
    let probe_absent = o.probe_absent;
    let ready = move |c: &UblkCtrl| {
        let i = c.dev_info();
        if target == Target::Loop {
            eprintln!(
                "{PROG}: backing file opened {}",
                if direct { "O_DIRECT" } else { "buffered" }
            );
        }
        if probe_absent {
            println!(
                "PROBE update_size={} quiesce={}",
                result_text(c.update_size(dev_size)),
                result_text(c.quiesce_dev(1000))
            );
        }
        println!("FEATURES 0x{features:x}");
        println!("FLAGS 0x{:x}", info.flags);
        println!("READY {}", i.dev_id);
        let _ = std::io::stdout().flush();
        // a signal that came before START_DEV stopped a device not yet live
        if STOP_SIGNAL.load(Ordering::SeqCst) != 0 {
            if let Err(e) = c.kill_dev() {
                eprintln!("{PROG}: STOP_DEV of ublk {}: {}", i.dev_id, err_text(&e));
            }
        }
    };
    let q_fn = move |qid: u16, dev: &UblkDev| queue::serve(qid, dev, conf);

    if let Err(e) = ctrl.run_target(tgt_init, q_fn, ready) {
        // queue threads may still hold /dev/ublkcN: a DEL_DEV that waits
        // for it would never return; exiting releases everything
        fail(format!(
            "starting ublk {dev_id} ({}): {}",
            if o.recover.is_some() {
                "END_USER_RECOVERY"
            } else {
                "SET_PARAMS/START_DEV"
            },
            err_text(&e)
        ));
    }

    // stopped: by a signal (STOP_DEV above) or by someone else (STOP_DEV,
    // DEL_DEV); delete it unless that happened already
    let mut failed = false;
    match ctrl.del_dev() {
        Ok(_) => {}
        Err(UblkError::UringIOError(r)) if r == -libc::ENODEV => {
            let _ = std::fs::remove_file(ctrl.run_path());
        }
        Err(e) => {
            eprintln!("{PROG}: DEL_DEV of ublk {dev_id}: {}", err_text(&e));
            failed = true;
        }
    }
    let s = queue::stats(info.nr_hw_queues as usize);
    let per_queue: Vec<String> = s.queue_ios.iter().map(|n| n.to_string()).collect();
    println!(
        "DONE ios={} data={} need_reg_buf={} buf_cmds={} io_errors={} failures={} queue_ios={} signal={}",
        s.ios,
        s.data,
        s.need_reg_buf,
        s.buf_cmds,
        s.io_errors,
        s.failures,
        per_queue.join(","),
        STOP_SIGNAL.load(Ordering::SeqCst)
    );
    let _ = std::io::stdout().flush();
    drop(backing);
    std::process::exit(if failed || s.failures > 0 { 1 } else { 0 });
}
