//! Network isolation: the fake API and the CLI share a private network namespace that has
//! nothing but loopback, so no byte of a run can leave the machine, by construction.
//!
//! A dedicated thread unshares its network namespace (Linux namespaces are per thread), brings
//! `lo` up, binds the fake API's listener and spawns the supervisor; the socket and the child
//! stay in that namespace after the thread ends. Creating a namespace needs CAP_SYS_ADMIN; where
//! it is refused the run falls back to the host namespace (loopback URL, scrubbed proxies) and
//! says so in its record, unless isolation is required.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

pub use crate::evidence::run::Isolation;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum NetworkPolicy {
    /// A private namespace when the system allows it, else the host's (recorded).
    #[default]
    Auto,
    /// A private namespace or no run.
    Isolated,
    /// The host namespace (the fake API still listens on 127.0.0.1 only).
    Host,
}

/// The network a run's processes live in: the harness reaches a server the CLI opens there
/// (opencode's `serve`) by connecting from inside it.
#[derive(Debug, Clone, Default)]
pub struct Netns(Option<Arc<OwnedFd>>);

impl Netns {
    /// A TCP connection to `addr` in this network (from a thread of its own that enters it:
    /// the socket stays in the namespace it was made in; the harness's threads stay where
    /// they are).
    pub fn connect(&self, addr: SocketAddr) -> std::io::Result<std::net::TcpStream> {
        let ns = self.0.clone();
        std::thread::spawn(move || {
            if let Some(fd) = ns {
                // SAFETY: setns moves only this short-lived thread into the namespace the fd
                // names; the fd is open for the call.
                if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            let stream =
                std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(10))?;
            stream.set_nonblocking(true)?;
            Ok(stream)
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("connect thread panicked")))
    }
}

/// A free TCP port on 127.0.0.1 in the calling thread's network namespace (in the run's
/// private namespace nothing else listens; in the host's, the port could be taken between
/// this and its use, and the CLI would say so).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// Binds the listener and spawns the child, both inside a fresh network namespace when the
/// policy allows; returns them with the isolation achieved and the namespace.
pub fn bind_and_spawn(
    policy: NetworkPolicy,
    spawn: impl FnOnce(SocketAddr) -> std::io::Result<tokio::process::Child> + Send,
) -> std::io::Result<(TcpListener, tokio::process::Child, Isolation, Netns)> {
    let runtime = tokio::runtime::Handle::current();
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let _entered = runtime.enter();
                let mut note = None;
                let private = match policy {
                    NetworkPolicy::Host => false,
                    NetworkPolicy::Auto | NetworkPolicy::Isolated => match private_namespace() {
                        Ok(()) => true,
                        Err(e) if policy == NetworkPolicy::Auto => {
                            note = Some(format!("private network namespace refused ({e}); ran in the host namespace on 127.0.0.1"));
                            false
                        }
                        Err(e) => {
                            return Err(std::io::Error::new(
                                e.kind(),
                                format!("--network isolated: cannot create a network namespace: {e} (needs root or CAP_SYS_ADMIN)"),
                            ));
                        }
                    },
                };
                let netns = match private {
                    true => Netns(Some(Arc::new(
                        std::fs::File::open("/proc/thread-self/ns/net")?.into(),
                    ))),
                    false => Netns(None),
                };
                let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
                listener.set_nonblocking(true)?;
                let addr = listener.local_addr()?;
                let interfaces = interfaces();
                let child = spawn(addr)?;
                let isolation = Isolation {
                    network: if private { "private-netns" } else { "host" }.into(),
                    interfaces,
                    note,
                };
                Ok((listener, child, isolation, netns))
            })
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("network setup thread panicked")))
    })
}

/// Moves the calling thread into a new network namespace and brings loopback up.
fn private_namespace() -> std::io::Result<()> {
    // SAFETY: unshare affects only the calling thread's network namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    loopback_up()
}

fn loopback_up() -> std::io::Result<()> {
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS on a datagram socket with an ifreq we own.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let mut rc = libc::ioctl(sock, libc::SIOCGIFFLAGS as _, &mut req);
        if rc == 0 {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            rc = libc::ioctl(sock, libc::SIOCSIFFLAGS as _, &mut req);
        }
        let err = std::io::Error::last_os_error();
        libc::close(sock);
        if rc != 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// Interface names in the calling thread's namespace.
fn interfaces() -> Vec<String> {
    std::fs::read_to_string("/proc/thread-self/net/dev")
        .map(|text| {
            text.lines()
                .skip(2)
                .filter_map(|l| l.split(':').next())
                .map(|name| name.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
}
