//! One queue: a thread running one async task per tag on a smol
//! LocalExecutor, driven by libublk's wait_and_handle_io_events(). Each
//! task FETCHes with the crate's submit_io_prep_cmd(), serves the request
//! and commits it with submit_io_commit_cmd(), which fetches the next.

use crate::{err_text, errno_text, Mode, QueueConf, Target, BACKING_FIXED};
use io_uring::{opcode, types};
use libublk::helpers::IoBuf;
use libublk::io::{BufDesc, UblkDev, UblkQueue};
use libublk::{sys, UblkError};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static IOS: AtomicU64 = AtomicU64::new(0);
static DATA: AtomicU64 = AtomicU64::new(0);
static NEED_REG_BUF: AtomicU64 = AtomicU64::new(0);
static BUF_CMDS: AtomicU64 = AtomicU64::new(0);
static IO_ERRORS: AtomicU64 = AtomicU64::new(0);
static FAILURES: AtomicU64 = AtomicU64::new(0);
const MAX_QUEUES: usize = 16;
static QUEUE_IOS: [AtomicU64; MAX_QUEUES] = [const { AtomicU64::new(0) }; MAX_QUEUES];

/// What the queues did, summed over all of them.
pub struct Stats {
    /// requests served
    pub ios: u64,
    /// of them READ and WRITE
    pub data: u64,
    /// requests handed over with UBLK_IO_F_NEED_REG_BUF
    pub need_reg_buf: u64,
    /// REGISTER_IO_BUF and UNREGISTER_IO_BUF commands the server sent
    pub buf_cmds: u64,
    /// requests completed with an error (backing I/O failed or was short)
    pub io_errors: u64,
    /// ublk or io_uring commands that failed
    pub failures: u64,
    /// requests served by each queue
    pub queue_ios: Vec<u64>,
}

pub fn stats(nr_queues: usize) -> Stats {
    Stats {
        ios: IOS.load(Relaxed),
        data: DATA.load(Relaxed),
        need_reg_buf: NEED_REG_BUF.load(Relaxed),
        buf_cmds: BUF_CMDS.load(Relaxed),
        io_errors: IO_ERRORS.load(Relaxed),
        failures: FAILURES.load(Relaxed),
        queue_ios: QUEUE_IOS[..nr_queues.min(MAX_QUEUES)]
            .iter()
            .map(|n| n.load(Relaxed))
            .collect(),
    }
}

/// A failed ublk or io_uring command: the request fails, the server goes
/// on, and exits 1 at the end. The first few are logged.
fn failure(msg: String) {
    if FAILURES.fetch_add(1, Relaxed) < 20 {
        eprintln!("libublk_serve: {msg}");
    }
}

/// A failure the queue cannot go on after (a FETCH or COMMIT refused, the
/// queue not set up): exit, the kernel cancels what the rings held.
fn fatal(msg: String) -> ! {
    eprintln!("libublk_serve: {msg}");
    std::process::exit(1);
}

/// Asked for in place of tag for the requests that must come back with
/// UBLK_IO_F_NEED_REG_BUF: far past the buffer table (depth slots).
const BAD_INDEX: u16 = 0xffff;

/// Where a tag's requests' data goes.
enum TagBuf {
    /// our buffer, the driver copies (copy mode)
    Copy(IoBuf<u8>),
    /// nothing in FETCH/COMMIT; the server registers the request (zc)
    Zc,
    /// a ublk_auto_buf_reg in the SQE's addr (auto, auto-fallback)
    Auto { fallback: bool },
}

impl TagBuf {
    /// The descriptor for the n-th FETCH/COMMIT_AND_FETCH of `tag`: what the
    /// next request's buffer is. With the fallback, every second request of
    /// each tag asks for BAD_INDEX.
    fn desc(&self, tag: u16, n: u64) -> BufDesc<'_> {
        match self {
            TagBuf::Copy(b) => BufDesc::Slice(b.as_slice()),
            TagBuf::Zc => BufDesc::Slice(&[]),
            TagBuf::Auto { fallback } => {
                let mut reg = sys::ublk_auto_buf_reg {
                    index: tag,
                    ..Default::default()
                };
                if *fallback {
                    reg.flags = sys::UBLK_AUTO_BUF_REG_FALLBACK as u8;
                    if (tag as u64 + n) % 2 == 1 {
                        reg.index = BAD_INDEX;
                    }
                }
                BufDesc::AutoReg(reg)
            }
        }
    }
}

pub fn serve(qid: u16, dev: &UblkDev, conf: QueueConf) {
    let q = UblkQueue::new(qid, dev).unwrap_or_else(|e| {
        fatal(format!(
            "queue {qid}: UblkQueue::new (io_uring setup, file registration, mmap of /dev/ublkc{}): {}",
            conf.dev_id,
            err_text(&e)
        ))
    });
    if conf.mode == Mode::Zc {
        // the crate makes a buffer table only for UBLK_F_AUTO_BUF_REG;
        // REGISTER_IO_BUF needs one: a slot per tag
        let depth = dev.dev_info.queue_depth as u32;
        if let Err(e) =
            libublk::with_task_io_ring_mut(|r| r.submitter().register_buffers_sparse(depth))
        {
            fatal(format!(
                "queue {qid}: IORING_REGISTER_BUFFERS2 (sparse, {depth}): {e}"
            ));
        }
    }

    let exe = smol::LocalExecutor::new();
    let qr = &q;
    let tasks: Vec<smol::Task<()>> = q
        .tags()
        .map(|tag| exe.spawn(serve_tag(qr, tag, conf)))
        .collect();
    if conf.mode == Mode::Zc {
        // start_dev() waits until every queue registered its buffers,
        // except with AUTO_BUF_REG or USER_COPY; zero copy has none to
        // register (submit_io_prep_cmd() with an empty slice and no IoBuf)
        dev.notify_buffer_registration_complete(false);
    }
    let run = libublk::wait_and_handle_io_events(
        qr,
        Some(20),
        || while exe.try_tick() {},
        || tasks.iter().all(|t| t.is_finished()),
    );
    if let Err(e) = smol::block_on(exe.run(run)) {
        failure(format!(
            "queue {qid}: wait_and_handle_io_events: {}",
            err_text(&e)
        ));
    }
}

async fn serve_tag(q: &UblkQueue<'_>, tag: u16, conf: QueueConf) {
    let tb = match conf.mode {
        Mode::Copy => TagBuf::Copy(IoBuf::new(q.dev.dev_info.max_io_buf_bytes as usize)),
        Mode::Zc => TagBuf::Zc,
        Mode::Auto => TagBuf::Auto { fallback: false },
        Mode::AutoFallback => TagBuf::Auto { fallback: true },
    };
    let io_buf = match &tb {
        TagBuf::Copy(b) => Some(b),
        _ => None,
    };
    let mut n = 0u64;
    let mut step = "FETCH_REQ";
    let mut r = q.submit_io_prep_cmd(tag, tb.desc(tag, n), -1, io_buf).await;
    loop {
        match r {
            Ok(res) if res == sys::UBLK_IO_RES_OK as i32 => {}
            Ok(res) => fatal(format!(
                "queue {} tag {tag}: {step}: {}",
                q.get_qid(),
                if res < 0 {
                    errno_text(res)
                } else {
                    format!("unexpected result {res}")
                }
            )),
            // UBLK_IO_RES_ABORT: the device is stopping
            Err(UblkError::QueueIsDown) => return,
            Err(e) => fatal(format!(
                "queue {} tag {tag}: {step}: {}",
                q.get_qid(),
                err_text(&e)
            )),
        }
        let res = handle(q, tag, conf, &tb).await;
        n += 1;
        step = "COMMIT_AND_FETCH_REQ";
        r = q.submit_io_commit_cmd(tag, tb.desc(tag, n), res).await;
    }
}

async fn handle(q: &UblkQueue<'_>, tag: u16, conf: QueueConf, tb: &TagBuf) -> i32 {
    let iod = *q.get_iod(tag);
    let op = iod.op_flags & 0xff;
    let flags = iod.op_flags;
    let data = op == sys::UBLK_IO_OP_READ || op == sys::UBLK_IO_OP_WRITE;
    let need_reg = flags & sys::UBLK_IO_F_NEED_REG_BUF != 0;
    let qid = q.get_qid();

    IOS.fetch_add(1, Relaxed);
    QUEUE_IOS[qid as usize % MAX_QUEUES].fetch_add(1, Relaxed);
    if data {
        DATA.fetch_add(1, Relaxed);
    }
    if need_reg {
        NEED_REG_BUF.fetch_add(1, Relaxed);
        if conf.mode != Mode::AutoFallback || !data {
            failure(format!(
                "queue {qid} tag {tag}: UBLK_IO_F_NEED_REG_BUF on op {op} in mode {:?}",
                conf.mode
            ));
            return -libc::EIO;
        }
    }
    // the server registers the request's buffer itself: always in zero
    // copy, after a failed automatic registration with the fallback
    let self_reg = match conf.mode {
        Mode::Zc => data,
        Mode::AutoFallback => need_reg,
        Mode::Copy | Mode::Auto => false,
    };
    if self_reg {
        BUF_CMDS.fetch_add(1, Relaxed);
        let r = q.submit_register_io_buf(tag, tag).await;
        if r < 0 {
            failure(format!(
                "queue {qid} tag {tag}: REGISTER_IO_BUF at index {tag}: {}",
                errno_text(r)
            ));
            return -libc::EIO;
        }
    }
    let len = iod.nr_sectors << 9;
    let res = match conf.target {
        Target::Null => match op {
            sys::UBLK_IO_OP_READ | sys::UBLK_IO_OP_WRITE => len as i32,
            sys::UBLK_IO_OP_FLUSH => 0,
            _ => -libc::EOPNOTSUPP,
        },
        Target::Loop => loop_io(q, tag, op, flags, iod.start_sector << 9, len, tb).await,
    };
    if self_reg {
        BUF_CMDS.fetch_add(1, Relaxed);
        let r = q.submit_unregister_io_buf(tag, tag).await;
        if r < 0 {
            failure(format!(
                "queue {qid} tag {tag}: UNREGISTER_IO_BUF at index {tag}: {}",
                errno_text(r)
            ));
            return -libc::EIO;
        }
    }
    if res < 0 && IO_ERRORS.fetch_add(1, Relaxed) < 20 {
        eprintln!(
            "libublk_serve: queue {qid} tag {tag}: op {op} at sector {} ({} sectors): {}",
            iod.start_sector,
            iod.nr_sectors,
            errno_text(res)
        );
    }
    res
}

/// A READ or WRITE's result: all of `len` or an error, never a short count
/// (the rest of the request would be stale).
fn rw_result(r: i32, len: u32) -> i32 {
    if r < 0 {
        r
    } else if r as u32 != len {
        -libc::EIO
    } else {
        r
    }
}

async fn loop_io(
    q: &UblkQueue<'_>,
    tag: u16,
    op: u32,
    flags: u32,
    off: u64,
    len: u32,
    tb: &TagBuf,
) -> i32 {
    let fd = types::Fixed(BACKING_FIXED);
    let fallocate = |mode: i32| {
        opcode::Fallocate::new(fd, len as u64)
            .offset(off)
            .mode(mode | libc::FALLOC_FL_KEEP_SIZE)
            .build()
    };
    match op {
        sys::UBLK_IO_OP_READ => {
            // zero copy: the request's pages are buffer `tag`, from 0
            let sqe = match tb {
                TagBuf::Copy(b) => opcode::Read::new(fd, b.as_mut_ptr(), len)
                    .offset(off)
                    .build(),
                _ => opcode::ReadFixed::new(fd, std::ptr::null_mut(), len, tag)
                    .offset(off)
                    .build(),
            };
            rw_result(q.ublk_submit_sqe(sqe).await, len)
        }
        sys::UBLK_IO_OP_WRITE => {
            let rwf = if flags & sys::UBLK_IO_F_FUA != 0 {
                libc::RWF_DSYNC
            } else {
                0
            };
            let sqe = match tb {
                TagBuf::Copy(b) => opcode::Write::new(fd, b.as_ptr(), len)
                    .offset(off)
                    .rw_flags(rwf)
                    .build(),
                _ => opcode::WriteFixed::new(fd, std::ptr::null(), len, tag)
                    .offset(off)
                    .rw_flags(rwf)
                    .build(),
            };
            rw_result(q.ublk_submit_sqe(sqe).await, len)
        }
        sys::UBLK_IO_OP_FLUSH => {
            let sqe = opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build();
            q.ublk_submit_sqe(sqe).await
        }
        sys::UBLK_IO_OP_DISCARD => {
            q.ublk_submit_sqe(fallocate(libc::FALLOC_FL_PUNCH_HOLE))
                .await
        }
        sys::UBLK_IO_OP_WRITE_ZEROES => {
            // NOUNMAP: keep the blocks (zero range) if the file system can
            if flags & sys::UBLK_IO_F_NOUNMAP != 0 {
                let r = q
                    .ublk_submit_sqe(fallocate(libc::FALLOC_FL_ZERO_RANGE))
                    .await;
                if r != -libc::EOPNOTSUPP {
                    return r;
                }
            }
            q.ublk_submit_sqe(fallocate(libc::FALLOC_FL_PUNCH_HOLE))
                .await
        }
        _ => -libc::EOPNOTSUPP,
    }
}
