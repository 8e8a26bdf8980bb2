//! The disk under a run, as the kernel shows it: which file system a path
//! is on, the OS page cache (`--drop-caches`, `--memory-limit`), and the
//! process's storage I/O counters (`/proc/self/io`), which tell whether
//! reads really reached the SSD.
//!
//! Keeping a data set out of the page cache. Dropping the cache
//! (`--drop-caches`) empties it before each timed phase, but the phase
//! refills it: only a data set larger than the free RAM keeps missing.
//! A memory cgroup bounds it for good: in cgroup v1 the page cache a
//! process's reads and writes bring in is charged to its cgroup, so with
//! `memory.limit_in_bytes` the kernel reclaims the cgroup's own clean
//! pages once it reaches the limit (measured on the development machine:
//! a 4 GiB file written and read back inside a 1 GiB cgroup kept at most
//! 1020 MiB of it cached, `memory.usage_in_bytes` stayed at 1023 MiB).
//! `--memory-limit` moves the run into such a cgroup ([`MemoryCgroup`]).
//! What else counts against the limit: the process's own memory (the
//! engines' DRAM caches and indexes) and the tmpfs pages it writes — a
//! Persimmon pool on /dev/shm — which cannot be reclaimed without swap,
//! so the limit must hold the pools with room for the page cache, or the
//! kernel kills the run.
//!
//! The SSD's own counters (`/sys/dev/block/M:m/stat`, [`Device`]) add
//! what the process counters cannot see: flush requests (each
//! `fdatasync` on ext4 sends the device one when its cache is write-back,
//! so flushes per operation are the write path's syncs per operation) and
//! the read requests that reached the device. They are the whole
//! device's: other processes' I/O on it counts too.
//!
//! Invariants:
//! - [`IoCounters`] are the whole process's (every thread, the engines'
//!   background threads included): a phase's delta charges an engine's
//!   compactions and syncs to the operations that caused them.
//! - `read_bytes` counts bytes the block layer fetched for the process
//!   (page cache misses and `O_DIRECT` reads alike), never page cache
//!   hits; `write_bytes` counts bytes the process sent (or dirtied) for
//!   storage. Files on tmpfs count in neither: a Persimmon pool on
//!   /dev/shm adds nothing.
//! - Dropping the page cache first writes back every dirty page (`sync`),
//!   so no acknowledged write is lost by it (it is not an fsync of the
//!   engines' files either: their own syncs are what the results measure).

use std::path::Path;

use crate::error::{Error, Result};

/// Where the kernel takes the command to drop clean caches.
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";
/// The process's cgroups, one line per hierarchy (`4:memory:/path`).
const SELF_CGROUP: &str = "/proc/self/cgroup";

/// The file system type of `path` from /proc/mounts (longest mount point
/// that contains it), when known.
pub fn filesystem_of(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, mount, fs) = (f.next()?, f.next()?, f.next()?);
            Some((mount.replace("\\040", " "), fs.to_string()))
        })
        .filter(|(mount, _)| path.starts_with(mount))
        .max_by_key(|(mount, _)| mount.len())
        .map(|(_, fs)| fs)
}

/// Writes back dirty pages, then drops the page cache, dentries and inodes
/// (`sync; echo 3 > /proc/sys/vm/drop_caches`). Needs root.
pub fn drop_page_cache() -> Result<()> {
    sync_all();
    std::fs::write(DROP_CACHES, "3\n").map_err(|e| {
        Error::io(
            format!("--drop-caches: write 3 into {DROP_CACHES} (needs root)"),
            e,
        )
    })
}

/// `sync(2)` through the `sync` command (the crate has no `unsafe` for
/// the system call); a missing command leaves the write-back to the
/// kernel's drop, which skips dirty pages.
fn sync_all() {
    let _ = std::process::Command::new("sync").status();
}

/// Fails now, rather than after the first load, when the page cache
/// cannot be dropped.
pub fn check_drop_page_cache() -> Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(DROP_CACHES)
        .map(drop)
        .map_err(|e| {
            Error::io(
                format!("--drop-caches: open {DROP_CACHES} for writing (needs root)"),
                e,
            )
        })
}

/// A memory cgroup (v1) the process moved itself into, under the one it
/// was in, with a limit on its memory and page cache. Dropping it moves
/// the process back and removes the cgroup (the kernel hands the pages
/// still charged to it to the parent).
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: std::path::PathBuf,
    parent: std::path::PathBuf,
}

impl MemoryCgroup {
    /// Creates `persimmon-bench.<pid>` under the process's memory cgroup,
    /// limits it to `limit_bytes` and moves the whole process (every
    /// thread) into it. Needs root and the cgroup v1 memory controller.
    pub fn enter(limit_bytes: u64) -> Result<MemoryCgroup> {
        let parent = own_memory_cgroup()?;
        let dir = parent.join(format!("persimmon-bench.{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::file("--memory-limit: create", &dir, e))?;
        let cgroup = MemoryCgroup { dir, parent };
        cgroup.write("memory.limit_in_bytes", &limit_bytes.to_string())?;
        cgroup.write("cgroup.procs", &std::process::id().to_string())?;
        Ok(cgroup)
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).map_err(|e| Error::file("--memory-limit: write", &path, e))
    }

    /// The limit as the kernel keeps it (rounded to pages).
    pub fn limit_bytes(&self) -> u64 {
        self.read("memory.limit_in_bytes")
    }

    /// The most memory (page cache included) charged to the cgroup so far.
    pub fn max_usage_bytes(&self) -> u64 {
        self.read("memory.max_usage_in_bytes")
    }

    fn read(&self, file: &str) -> u64 {
        std::fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let procs = self.parent.join("cgroup.procs");
        let _ = std::fs::write(procs, std::process::id().to_string());
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The directory of the process's cgroup v1 memory controller.
fn own_memory_cgroup() -> Result<std::path::PathBuf> {
    let refuse = |why: &str| {
        Error::usage(format!(
            "--memory-limit needs the cgroup v1 memory controller: {why} (otherwise run the \
             whole `persimmon bench` in a memory cgroup yourself, or use --drop-caches)"
        ))
    };
    let cgroups = std::fs::read_to_string(SELF_CGROUP).map_err(|e| refuse(&e.to_string()))?;
    let mounts = std::fs::read_to_string("/proc/mounts").map_err(|e| refuse(&e.to_string()))?;
    let path = memory_cgroup_path(&cgroups)
        .ok_or_else(|| refuse("no memory line in /proc/self/cgroup"))?;
    let mount = memory_controller_mount(&mounts)
        .ok_or_else(|| refuse("no cgroup mount with the memory controller"))?;
    Ok(Path::new(&mount).join(path.trim_start_matches('/')))
}

/// The memory controller's path in `/proc/self/cgroup` text.
fn memory_cgroup_path(cgroups: &str) -> Option<String> {
    cgroups.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then(|| path.to_string())
    })
}

/// Where the cgroup v1 hierarchy with the memory controller is mounted,
/// from `/proc/mounts` text.
fn memory_controller_mount(mounts: &str) -> Option<String> {
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (mount, fs, options) = (f.get(1)?, f.get(2)?, f.get(3)?);
        (*fs == "cgroup" && options.split(',').any(|o| o == "memory")).then(|| mount.to_string())
    })
}

/// A block device's completed requests so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
}

impl DeviceCounters {
    /// From the text of a sysfs block `stat` file: reads are field 0,
    /// writes field 4, flushes field 15 (kernels before 5.5 have no
    /// flush field: 0).
    fn parse(text: &str) -> DeviceCounters {
        let fields: Vec<u64> = text
            .split_whitespace()
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        let field = |i: usize| fields.get(i).copied().unwrap_or(0);
        DeviceCounters {
            reads: field(0),
            writes: field(4),
            flushes: field(15),
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &DeviceCounters) -> DeviceCounters {
        DeviceCounters {
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            flushes: self.flushes.saturating_sub(earlier.flushes),
        }
    }
}

/// The block device a directory's file system is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Its sysfs `stat` file.
    stat: std::path::PathBuf,
}

impl Device {
    /// The device under `path`, when it is a block device sysfs knows (not
    /// tmpfs: its device number has no block device).
    pub fn of(path: &Path) -> Option<Device> {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(path).ok()?.dev();
        let stat = Path::new("/sys/dev/block")
            .join(format!("{}:{}", major(dev), minor(dev)))
            .join("stat");
        stat.is_file().then_some(Device { stat })
    }

    /// Its counters now (zeros when sysfs cannot be read).
    pub fn counters(&self) -> DeviceCounters {
        std::fs::read_to_string(&self.stat)
            .map(|t| DeviceCounters::parse(&t))
            .unwrap_or_default()
    }
}

/// The major number of a Linux device number (glibc's `gnu_dev_major`).
fn major(dev: u64) -> u64 {
    ((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000)
}

/// The minor number of a Linux device number (glibc's `gnu_dev_minor`).
fn minor(dev: u64) -> u64 {
    (dev & 0xff) | ((dev >> 12) & 0xffff_ff00)
}

/// The process's I/O and, when the run has one, the data device's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub io: IoCounters,
    pub device: DeviceCounters,
}

impl DiskCounters {
    /// The counters now, `device`'s included when given.
    pub fn now(device: Option<&Device>) -> DiskCounters {
        DiskCounters {
            io: IoCounters::now(),
            device: device.map(Device::counters).unwrap_or_default(),
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &DiskCounters) -> DiskCounters {
        DiskCounters {
            io: self.io.since(&earlier.io),
            device: self.device.since(&earlier.device),
        }
    }
}

/// The process's storage I/O so far (`/proc/self/io`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Bytes read from storage (page cache misses, direct reads).
    pub read_bytes: u64,
    /// Bytes written (or dirtied) for storage.
    pub write_bytes: u64,
}

impl IoCounters {
    /// The counters now; zeros where the kernel does not keep them.
    pub fn now() -> IoCounters {
        std::fs::read_to_string("/proc/self/io")
            .map(|text| IoCounters::parse(&text))
            .unwrap_or_default()
    }

    fn parse(text: &str) -> IoCounters {
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        IoCounters {
            read_bytes: field("read_bytes"),
            write_bytes: field("write_bytes"),
        }
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &IoCounters) -> IoCounters {
        IoCounters {
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_counters_parse_the_kernels_format() {
        let text = "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 8192\n\
                    write_bytes: 40960\ncancelled_write_bytes: 4096\n";
        let c = IoCounters::parse(text);
        assert_eq!(
            c,
            IoCounters {
                read_bytes: 8192,
                write_bytes: 40960
            }
        );
        let later = IoCounters {
            read_bytes: 10_000,
            write_bytes: 40_000,
        };
        assert_eq!(
            later.since(&c),
            IoCounters {
                read_bytes: 1808,
                write_bytes: 0
            },
            "a counter never runs backwards into a huge delta"
        );
        assert_eq!(IoCounters::parse("garbage"), IoCounters::default());
    }

    #[test]
    fn device_counters_parse_sysfs_stat() {
        let stat =
            " 1349406    75558 136771034  8440340   866822   180611 165003272   859783        \
                    0   582452  9411795   128880       93 136465720    83101   346322    28570\n";
        let c = DeviceCounters::parse(stat);
        assert_eq!(
            c,
            DeviceCounters {
                reads: 1_349_406,
                writes: 866_822,
                flushes: 346_322
            }
        );
        // A kernel without the discard and flush fields.
        let old = DeviceCounters::parse("5 0 40 1 7 0 56 2 0 3 3");
        assert_eq!((old.reads, old.writes, old.flushes), (5, 7, 0));
        assert_eq!(c.since(&old).flushes, 346_322);
        assert_eq!(old.since(&c), DeviceCounters::default());
    }

    #[test]
    fn device_numbers_split_as_glibc_splits_them() {
        // makedev(254, 0) and makedev(259, 3) in glibc's encoding.
        assert_eq!((major(0xfe00), minor(0xfe00)), (254, 0));
        let nvme = (259u64 << 8) & 0xfff00 | 3;
        assert_eq!((major(nvme), minor(nvme)), (259, 3));
        let big =
            (0x1234u64 & !0xfff) << 32 | (0x1234 & 0xfff) << 8 | (0x56789 & !0xff) << 12 | 0x89;
        assert_eq!((major(big), minor(big)), (0x1234, 0x56789));
        if let Some(root) = Device::of(Path::new("/")) {
            let now = root.counters();
            assert!(now.reads > 0 || now.writes > 0, "{now:?}");
        }
        if filesystem_of(Path::new("/dev/shm")).as_deref() == Some("tmpfs") {
            assert_eq!(Device::of(Path::new("/dev/shm")), None);
        }
    }

    #[test]
    fn the_memory_controller_is_found_in_the_kernels_tables() {
        let cgroups = "9:name=systemd:/\n4:memory:/process_api/88bd\n1:cpu:/\n0::/\n";
        assert_eq!(
            memory_cgroup_path(cgroups).as_deref(),
            Some("/process_api/88bd")
        );
        assert_eq!(
            memory_cgroup_path("0::/user.slice\n"),
            None,
            "cgroup v2 only"
        );
        let mounts = "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n\
                      cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
                      cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        assert_eq!(
            memory_controller_mount(mounts).as_deref(),
            Some("/sys/fs/cgroup/memory")
        );
        assert_eq!(
            memory_controller_mount("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"),
            None
        );
    }

    #[test]
    fn a_file_read_back_from_disk_counts_or_the_kernel_keeps_no_counters() {
        // Writing a file counts its bytes for storage (when the kernel
        // keeps the counters at all: /proc/self/io needs task I/O
        // accounting); tmpfs does not count, so write next to the crate.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let before = IoCounters::now();
        std::fs::write(dir.path().join("f"), vec![7u8; 1 << 20]).unwrap();
        let file = std::fs::File::open(dir.path().join("f")).unwrap();
        file.sync_all().unwrap();
        let delta = IoCounters::now().since(&before);
        if std::path::Path::new("/proc/self/io").exists()
            && filesystem_of(dir.path()).is_some_and(|fs| fs != "tmpfs")
        {
            assert!(delta.write_bytes >= 1 << 20, "{delta:?}");
        }
    }
}
