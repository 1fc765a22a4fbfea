//! The command line: global options, commands and their help texts (clap).

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

const ROOT_AFTER_HELP: &str = "\
Exit codes:
  0    ok
  1    usage or bad input (bad path, bad option, bad value, no such node, not authorized)
  2    could not connect to ZooKeeper (or lost the connection before the work was done)
  3    timed out waiting (--timeout passed before the lock, leadership or condition came)
  4    the lock's hold or the leadership was lost while the command ran (it was stopped)
  5    `counter cas` found another value than OLD (nothing was written)
  70   a bug in zkr (please report it)
  `lock` and `elect` otherwise exit with their command's exit code (128+N if it was killed
  by signal N; 126 if it could not be executed, 127 if it was not found), and with 128+N
  when signal N stopped them before the command started.

Examples:
  zkr lock /locks/deploy -- ./deploy.sh          # one deploy at a time, Curator-compatible
  zkr elect /services/billing/leader --requeue -- ./billing-worker
  zkr inspect /locks/deploy                       # who holds it, who waits, with sessions
  zkr counter /counters/builds add 1
  ZKR_SERVER=zk1:2181,zk2:2181 zkr observe /services/billing/leader --json

Docs: docs/CLI.md (commands, exit codes, signals, what elect means).";

/// `zkr`: Apache Curator's ZooKeeper recipes from the shell.
#[derive(Parser, Debug)]
#[command(
    name = "zkr",
    version,
    about = "Apache Curator's ZooKeeper recipes from the shell: locks, leader election, counters, inspection",
    long_about = "Apache Curator's ZooKeeper recipes from the shell: run a command under a lock or \
                  only while leader, follow a leader, count, and see who holds, waits or leads on \
                  any recipe path. Node layout is Curator 5.x's, so Java services using Curator \
                  contend, elect and count with zkr.",
    after_help = ROOT_AFTER_HELP,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes (before or after the command name).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    #[arg(
        long,
        help = "ZooKeeper connect string: host:port[,host:port...][/chroot]",
        env = "ZKR_SERVER",
        default_value = "127.0.0.1:2181",
        value_name = "HOSTS",
        global = true
    )]
    pub server: String,

    /// Session timeout asked of the server; a holder that dies without closing keeps its
    /// lock (or leadership) this long
    #[arg(long, env = "ZKR_SESSION_TIMEOUT", default_value = "30s", value_name = "D",
          value_parser = parse_duration, global = true)]
    pub session_timeout: Duration,

    /// How long to wait for a connection (at start, and before each retry of an operation)
    #[arg(long, env = "ZKR_CONNECT_TIMEOUT", default_value = "10s", value_name = "D",
          value_parser = parse_duration, global = true)]
    pub connect_timeout: Duration,

    /// Digest authentication, USER:PASSWORD (prefer the environment variable: arguments are
    /// visible to other users in `ps`)
    #[arg(
        long,
        env = "ZKR_AUTH",
        value_name = "USER:PASSWORD",
        hide_env_values = true,
        global = true
    )]
    pub auth: Option<String>,

    /// Curator namespace: every path is relative to /NAMESPACE
    #[arg(long, env = "ZKR_NAMESPACE", value_name = "NAMESPACE", global = true)]
    pub namespace: Option<String>,

    /// Connect over TLS, trusting the system's CAs (implied by any other --tls-* option)
    #[arg(
        long,
        env = "ZKR_TLS",
        global = true,
        help_heading = "Secure connections"
    )]
    pub tls: bool,

    /// CA certificate(s) that sign the servers' certificates (PEM file, or PEM text beginning
    /// with -----BEGIN); default: the system's trust store
    #[arg(
        long,
        env = "ZKR_TLS_CA",
        value_name = "PEM",
        global = true,
        help_heading = "Secure connections"
    )]
    pub tls_ca: Option<String>,

    /// Client certificate (PEM), for servers that ask for one (ssl.clientAuth)
    #[arg(
        long,
        env = "ZKR_TLS_CERT",
        value_name = "PEM",
        global = true,
        requires = "tls_key",
        help_heading = "Secure connections"
    )]
    pub tls_cert: Option<String>,

    /// The client certificate's private key (PEM: PKCS#8, RSA or EC; unencrypted): a file
    /// path. PEM text only through ZKR_TLS_KEY, never on the command line (other users of the
    /// machine see command lines)
    #[arg(
        long,
        env = "ZKR_TLS_KEY",
        value_name = "FILE",
        global = true,
        requires = "tls_cert",
        hide_env_values = true,
        // Key text starting with `-----BEGIN` reaches `connect::tls_options`, which refuses it
        // without repeating it (clap's "unexpected argument" error would print it).
        allow_hyphen_values = true,
        help_heading = "Secure connections"
    )]
    pub tls_key: Option<String>,

    /// Do not check that the server's certificate names the host it is reached at (the chain
    /// is still checked; a man-in-the-middle risk)
    #[arg(
        long,
        env = "ZKR_TLS_NO_VERIFY_HOSTNAME",
        global = true,
        help_heading = "Secure connections"
    )]
    pub tls_no_verify_hostname: bool,

    /// SASL user (DIGEST-MD5); the password comes from ZKR_SASL_PASSWORD or
    /// --sasl-password-file, never from the command line
    #[arg(
        long,
        env = "ZKR_SASL_USER",
        value_name = "USER",
        global = true,
        help_heading = "Secure connections"
    )]
    pub sasl_user: Option<String>,

    /// File holding the SASL password (its first line)
    #[arg(
        long,
        env = "ZKR_SASL_PASSWORD_FILE",
        value_name = "FILE",
        global = true,
        help_heading = "Secure connections"
    )]
    pub sasl_password_file: Option<std::path::PathBuf>,

    /// SASL mechanism
    #[arg(
        long,
        env = "ZKR_SASL_MECHANISM",
        value_name = "MECH",
        default_value = "DIGEST-MD5",
        global = true,
        help_heading = "Secure connections"
    )]
    pub sasl_mechanism: String,

    /// Print JSON (one object per line) instead of text
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command while holding a lock (InterProcessMutex, read/write lock or semaphore)
    #[command(after_help = LOCK_AFTER_HELP)]
    Lock(LockArgs),
    /// Run a command only while leader (LeaderSelector, or LeaderLatch with --latch)
    #[command(after_help = ELECT_AFTER_HELP)]
    Elect(ElectArgs),
    /// Print the leader of an election and every change (without taking part)
    #[command(after_help = OBSERVE_AFTER_HELP)]
    Observe(ObserveArgs),
    /// Read or change a DistributedAtomicLong (8-byte big-endian value)
    #[command(after_help = COUNTER_AFTER_HELP)]
    Counter(CounterArgs),
    /// Read or set a SharedCount (4-byte big-endian value)
    #[command(after_help = SHARED_COUNT_AFTER_HELP)]
    SharedCount(SharedCountArgs),
    /// Show what lives at a recipe path: holders, waiters, participants, leases, values
    #[command(after_help = INSPECT_AFTER_HELP)]
    Inspect(InspectArgs),
    /// Stream changes of a node (or a subtree) as JSON lines
    #[command(after_help = WATCH_AFTER_HELP)]
    Watch(WatchArgs),
    /// Print a shell completion script
    #[command(after_help = COMPLETIONS_AFTER_HELP)]
    Completions(CompletionsArgs),
    /// Run a command while registered as a member of a group (Curator's GroupMember)
    #[command(after_help = MEMBER_AFTER_HELP)]
    Member(MemberArgs),
    /// Service discovery with Curator's layout: register while a command runs, list, get, pick, watch
    #[command(after_help = DISCOVER_AFTER_HELP, subcommand)]
    Discover(DiscoverCommand),
    /// Create, read, change, delete and list nodes (zkCli's create, get, set, delete, ls)
    #[command(after_help = crate::cmd::node::NODE_AFTER_HELP, subcommand)]
    Node(crate::cmd::node::NodeCommand),
    /// Read and set a node's ACL (zkCli's getAcl, setAcl), make digest entries
    #[command(after_help = crate::cmd::node::ACL_AFTER_HELP, subcommand)]
    Acl(crate::cmd::node::AclCommand),
    /// Put items into a queue or take one (SimpleDistributedQueue, or DistributedQueue)
    #[command(after_help = QUEUE_AFTER_HELP, subcommand)]
    Queue(QueueCommand),
    /// Enter or leave a DistributedDoubleBarrier
    #[command(after_help = BARRIER_AFTER_HELP, subcommand)]
    Barrier(BarrierCommand),
    /// Show or change the ensemble's members (dynamic reconfiguration)
    #[command(after_help = crate::cmd::ensemble::ENSEMBLE_AFTER_HELP, subcommand)]
    Ensemble(crate::cmd::ensemble::EnsembleCommand),
}

const QUEUE_AFTER_HELP: &str = "\
Curator's layouts: a SimpleDistributedQueue (PATH/qn-<seq>, raw bytes) by default, Curator's
DistributedQueue (PATH/queue-<seq>, its item framing) with --distributed. `put` prints each
item's node; `take` prints the item's data (each message of a multi-item on its own line) and
exits 3 when no item came within --timeout. With --distributed --lock-path, the item is
completed only after it was written to stdout (exactly once with Curator's consumers).

Examples:
  zkr queue put /jobs 'resize 42' 'resize 43'
  zkr queue take /jobs --timeout 10s
  zkr queue put /jobs --distributed --multi part-1 part-2     # one item (Curator's putMulti)
  zkr queue take /jobs --distributed --lock-path /jobs-locks --json";

const BARRIER_AFTER_HELP: &str = "\
Curator's DistributedDoubleBarrier (PATH/<uuid> members, PATH/ready). `enter` returns (exit 0)
once --members members are in; zkr's member node goes with its session when it exits, so the
members still in are the other processes'. `leave` waits until every member has left. Both
exit 3 when --timeout passes first.

Examples:
  zkr barrier enter /barriers/start --members 3 --timeout 60s && ./run-phase-1
  zkr barrier leave /barriers/start --members 3 --timeout 5m";

#[derive(Subcommand, Debug)]
pub enum QueueCommand {
    /// Put each DATA as an item (or all as one with --multi)
    Put(QueuePutArgs),
    /// Take one item and print it
    Take(QueueTakeArgs),
}

#[derive(Args, Debug)]
pub struct QueuePutArgs {
    /// The queue's node
    pub path: String,
    /// The items (UTF-8 text)
    #[arg(required = true, value_name = "DATA")]
    pub data: Vec<String>,
    /// Curator's DistributedQueue layout (`queue-<seq>`, item framing) instead of the simple queue
    #[arg(long)]
    pub distributed: bool,
    /// Put every DATA as one item (Curator's putMulti; needs --distributed)
    #[arg(long, requires = "distributed")]
    pub multi: bool,
}

#[derive(Args, Debug)]
pub struct QueueTakeArgs {
    /// The queue's node
    pub path: String,
    /// Give up after this long (exit 3); default: wait without limit
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Curator's DistributedQueue layout (`queue-<seq>`, item framing) instead of the simple queue
    #[arg(long)]
    pub distributed: bool,
    /// Curator's lock path: the item is completed only once printed (needs --distributed)
    #[arg(long, value_name = "PATH", requires = "distributed")]
    pub lock_path: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum BarrierCommand {
    /// Enter: wait until --members members are in
    Enter(BarrierArgs),
    /// Leave: wait until every member has left
    Leave(BarrierArgs),
}

#[derive(Args, Debug)]
pub struct BarrierArgs {
    /// The barrier's node
    pub path: String,
    /// How many members open the barrier
    #[arg(long, value_name = "N", required = true)]
    pub members: usize,
    /// Give up after this long (exit 3); default: wait without limit
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
}

const DISCOVER_AFTER_HELP: &str = "\
Curator's curator-x-discovery layout and JSON (BASE/NAME/ID nodes), so Java services using
Curator's ServiceDiscovery and zkr see the same instances. Instances print as Curator's JSON
with --json, else as one line each: ID ADDRESS:PORT (SSL PORT) [disabled] URI.

Examples:
  zkr discover register /services orders --address 10.0.0.7 --port 8080 -- ./orders-server
  zkr discover list /services                 # the service names
  zkr discover list /services orders --json   # the instances, as Curator's JSON lines
  zkr discover pick /services orders          # one enabled instance (random)
  zkr discover watch /services orders         # ADDED / UPDATED / REMOVED / INVALID as JSON lines";

#[derive(Subcommand, Debug)]
pub enum DiscoverCommand {
    /// Run a command while an instance is registered (removed when it exits)
    Register(DiscoverRegisterArgs),
    /// The service names under BASE, or the instances of NAME
    List(DiscoverListArgs),
    /// One instance
    Get(DiscoverGetArgs),
    /// Pick one usable (enabled) instance of NAME
    Pick(DiscoverPickArgs),
    /// Follow the instances of NAME (JSON lines)
    Watch(DiscoverWatchArgs),
}

#[derive(Args, Debug)]
pub struct DiscoverRegisterArgs {
    /// The discovery base path (Curator's basePath)
    pub base: String,
    /// The service name
    pub name: String,
    /// The instance's address
    #[arg(long, value_name = "A")]
    pub address: Option<String>,
    /// The instance's port
    #[arg(long, value_name = "P")]
    pub port: Option<i32>,
    /// The instance's SSL port
    #[arg(long, value_name = "P")]
    pub ssl_port: Option<i32>,
    /// The instance id [default: a random UUID]
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// The payload: any JSON value
    #[arg(long, value_name = "JSON")]
    pub payload: Option<String>,
    /// The payload's Java class (Jackson type information for Curator's readers)
    #[arg(long, value_name = "CLASS")]
    pub payload_class: Option<String>,
    /// DYNAMIC (ephemeral), DYNAMIC_SEQUENTIAL, STATIC or PERMANENT
    #[arg(long = "type", value_name = "T", default_value = "DYNAMIC")]
    pub service_type: String,
    /// Curator's URI spec, e.g. '{scheme}://{address}:{port}'
    #[arg(long, value_name = "TEMPLATE")]
    pub uri_spec: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct DiscoverListArgs {
    /// The discovery base path
    pub base: String,
    /// A service name: list its instances instead of the names
    pub name: Option<String>,
}

#[derive(Args, Debug)]
pub struct DiscoverGetArgs {
    /// The discovery base path
    pub base: String,
    /// The service name
    pub name: String,
    /// The instance id
    pub id: String,
}

#[derive(Args, Debug)]
pub struct DiscoverPickArgs {
    /// The discovery base path
    pub base: String,
    /// The service name
    pub name: String,
    /// How to pick: random, round_robin or sticky (one pick per run: random spreads load)
    #[arg(long, default_value = "random", value_name = "S")]
    pub strategy: String,
}

#[derive(Args, Debug)]
pub struct DiscoverWatchArgs {
    /// The discovery base path
    pub base: String,
    /// The service name
    pub name: String,
}

const MEMBER_AFTER_HELP: &str = "\
The command runs while this process is a member of the group at PATH: the ephemeral node
PATH/ID holding DATA (Curator's GroupMember layout, so Curator's members and zkrecipes' see
it). The registration is kept through reconnects, deletes and session expiry, and removed when
the command exits; zkr exits with the command's code. If another live session holds ID, zkr
exits 1 before running anything and leaves that node alone; if it happens while the command
runs (our session expired and someone took the id), the command gets SIGTERM (SIGKILL after
--grace) and zkr exits 4.

The command gets ZKR_MEMBER_PATH, ZKR_MEMBER_ID, ZKR_MEMBER_NODE, ZKR_SESSION_ID and
ZKR_SERVER/ZKR_NAMESPACE. Signals are passed on as for `zkr lock`.

Examples:
  zkr member /services/api --id \"$(hostname)\" --data 10.0.0.7:8080 -- ./api-server
  zkr member /workers/batch -- ./worker.sh";

#[derive(Args, Debug)]
pub struct MemberArgs {
    /// The group path (Curator's GroupMember membership path)
    pub path: String,

    /// The member id, the node's name [default: HOST:PID]
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,

    /// The member's payload, stored in its node [default: empty]
    #[arg(long, value_name = "DATA")]
    pub data: Option<String>,

    #[command(flatten)]
    pub run: RunArgs,
}

const LOCK_AFTER_HELP: &str = "\
The command runs once the lock is held, with ZKR_FENCING_TOKEN (the lock node's czxid: it
strictly increases from one holder to the next), ZKR_LOCK_PATH, ZKR_LOCK_NODE, ZKR_SESSION_ID
and ZKR_SERVER/ZKR_NAMESPACE (for zkr inside it) in its environment. The lock is released
when the command exits, however it exits; zkr exits with the command's exit code.

If the hold is lost (the connection is suspended, or the session lost, per --lost-policy),
the command is sent SIGTERM, then SIGKILL after --grace, and zkr exits with code 4. A hold
already lost when it is granted runs nothing (exit 4). Giving the hold back and closing the
session take at most 2 s each once the command has ended (a node left behind on a dead
connection goes when the session expires).
SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to zkr are passed on to the
command. The command runs in a process group of its own (signals reach its children too);
with --foreground it stays in zkr's group and can read the terminal. If zkr itself is killed
with SIGKILL, the kernel kills the command (but not the command's own children).

Examples:
  zkr lock /locks/deploy -- ./deploy.sh
  zkr lock /locks/deploy --timeout 30s -- sh -c 'echo \"token $ZKR_FENCING_TOKEN\"; ./deploy.sh'
  zkr lock /locks/db --read -- ./backup.sh           # readers share, --write is exclusive
  zkr lock /pools/gpu --semaphore 4 -- ./train.sh    # at most 4 at a time
  zkr lock /locks/cron --timeout 0s -- ./job.sh || echo \"busy (exit 3)\"";

const ELECT_AFTER_HELP: &str = "\
Leadership lasts while the command runs (LeaderSelector: an InterProcessMutex on PATH, nodes
holding the id, a fair queue). When the command exits, zkr gives leadership up and exits with
its code; with --requeue it queues again and runs the command again each time it leads, until
zkr is signalled. If leadership is lost (connection suspended or session lost, per
--lost-policy), the command is sent SIGTERM (SIGKILL after --grace); zkr then exits with code
4, or with --requeue waits to lead again.

--latch uses LeaderLatch's layout instead (for groups whose Java members use LeaderLatch):
the command starts when the latch leads and is stopped if it stops leading; when it exits, zkr
leaves the latch (--requeue: joins again at the end of the line).

The command gets ZKR_FENCING_TOKEN (the leadership epoch: our node's czxid), ZKR_ELECTION_PATH,
ZKR_LEADER_ID, ZKR_SESSION_ID and ZKR_SERVER/ZKR_NAMESPACE. Signals are passed on as for
`zkr lock`.

Examples:
  zkr elect /services/billing/leader -- ./billing-worker
  zkr elect /services/billing/leader --id \"$(hostname)\" --requeue -- ./billing-worker
  zkr elect /services/billing/leader --latch --timeout 1m -- ./run-once.sh
  zkr elect /cron/nightly --timeout 0s -- ./job.sh || echo \"someone else leads (exit 3)\"";

const OBSERVE_AFTER_HELP: &str = "\
Prints the current leader of a LeaderLatch or LeaderSelector group (Curator's or zkr's), then
one line per change; `(none)` (JSON: null) when nobody leads. Never joins the group.

--until stops at the first state (the current one included) that matches:
  change   the leader differs from the one first printed
  none     nobody leads
  any      somebody leads
  id=ID    the participant ID leads

Examples:
  zkr observe /services/billing/leader
  zkr observe /services/billing/leader --json
  zkr observe /services/billing/leader --until id=host-b --timeout 60s && echo \"host-b leads\"";

const COUNTER_AFTER_HELP: &str = "\
Curator's DistributedAtomicLong encoding (8 bytes, big-endian; a missing node reads as 0).
`add` never fails silently: it prints the new value or exits non-zero. `cas` exits 5 (and
prints the current value) when the counter is not OLD.

Examples:
  zkr counter /counters/builds get
  zkr counter /counters/builds add 1
  zkr counter /counters/builds add -2
  zkr counter /counters/builds set 100
  zkr counter /counters/builds cas 100 0";

const SHARED_COUNT_AFTER_HELP: &str = "\
Curator's SharedCount encoding (4 bytes, big-endian). `get` only reads (a missing node reads
as 0); `set` creates the node if needed.

Examples:
  zkr shared-count /config/replicas get
  zkr shared-count /config/replicas set 3";

const INSPECT_AFTER_HELP: &str = "\
Recognises a mutex (InterProcessMutex, also LeaderSelector's layout), read/write lock,
semaphore (InterProcessSemaphoreV2, InterProcessSemaphoreMutex), leader latch, counter and
shared count, Curator's or zkr's alike, and lists holders, waiters and participants in queue
order with their session ids, node ages, fencing tokens (czxid) and data (the participant id).

Examples:
  zkr inspect /locks/deploy
  zkr inspect /services/billing/leader --json
  zkr inspect /counters/builds";

const WATCH_AFTER_HELP: &str = "\
Prints one JSON object per line: {\"time\", \"type\", \"path\"} with type created, deleted,
data_changed, children_changed, or the connection events disconnected, reconnected and
session_lost. Runs until interrupted.

One persistent watch (recursive with --recursive): no change is folded or missed while
connected. With --recursive, children_changed of the parent follows each created or deleted
below PATH. After reconnected, changes made while disconnected were not reported.

With --exact: a stat-only cache (Curator's CuratorCache) of PATH and its children (with
--recursive: the subtree) instead. Types created, data_changed, deleted, each with
\"resync\": true when found by the resync after a reconnect or a new session (a change made
while disconnected), and resynced when a resync is complete: nothing is missed. One
initialized line says the initial load is done (changes from then on are printed). It costs
one read per change and ~0.5 KB of memory per node.

Examples:
  zkr watch /config
  zkr watch /services --recursive
  zkr watch /services --recursive --exact";

const COMPLETIONS_AFTER_HELP: &str = "\
Examples:
  zkr completions bash > /etc/bash_completion.d/zkr
  zkr completions zsh > \"${fpath[1]}/_zkr\"
  zkr completions fish > ~/.config/fish/completions/zkr.fish";

/// Which connection states end a hold or a leadership (Curator's ConnectionStateErrorPolicy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LostPolicyArg {
    /// Lost as soon as the connection is suspended (another process may hold it by the time
    /// the connection is back): the safe default
    Standard,
    /// Lost only when the session is lost; a suspended connection that comes back keeps it
    Session,
}

/// What `lock`, `elect`, `member` and `discover register` share: how the command runs.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// How long the command gets between SIGTERM and SIGKILL when the hold or leadership is lost
    #[arg(long, default_value = "5s", value_name = "D", value_parser = parse_duration)]
    pub grace: Duration,

    /// Keep the command in zkr's process group and terminal (interactive commands); signals
    /// then reach the command only, not its children, and SIGINT/SIGQUIT come from the terminal
    #[arg(long)]
    pub foreground: bool,

    /// The command and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "CMD", num_args = 1..)]
    pub command: Vec<OsString>,
}

#[derive(Args, Debug)]
pub struct LockArgs {
    /// The lock path (Curator's lock path: the contenders' nodes are its children)
    pub path: String,

    /// Give up (exit 3) if the lock is not held within D (0s: try once)
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Take the read side of an InterProcessReadWriteLock (shared with other readers)
    #[arg(long, conflicts_with_all = ["write", "semaphore"])]
    pub read: bool,

    /// Take the write side of an InterProcessReadWriteLock (exclusive)
    #[arg(long, conflicts_with = "semaphore")]
    pub write: bool,

    /// Take one lease of an InterProcessSemaphoreV2 with N leases
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub semaphore: Option<u32>,

    /// Data stored in our lock node, shown by `zkr inspect` [default: HOST:PID]
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,

    /// When the hold or leadership counts as lost
    #[arg(long, value_enum, default_value_t = LostPolicyArg::Standard, value_name = "POLICY")]
    pub lost_policy: LostPolicyArg,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct ElectArgs {
    /// The election path (Curator's leader path)
    pub path: String,

    /// Participant id stored in our node [default: HOST:PID]
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,

    /// After the command exits (or leadership is lost), queue again and run it again when
    /// leading, until zkr is signalled
    #[arg(long)]
    pub requeue: bool,

    /// Use LeaderLatch's layout instead of LeaderSelector's
    #[arg(long)]
    pub latch: bool,

    /// Give up (exit 3) if not leading within D; the first attempt (a look at the line once
    /// our node is in it) always completes, so 0s means try once
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// When the hold or leadership counts as lost
    #[arg(long, value_enum, default_value_t = LostPolicyArg::Standard, value_name = "POLICY")]
    pub lost_policy: LostPolicyArg,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct ObserveArgs {
    /// The election path (LeaderLatch or LeaderSelector)
    pub path: String,

    /// Exit 0 at the first state that matches: change, none, any, id=ID
    #[arg(long, value_name = "COND", value_parser = parse_until)]
    pub until: Option<Until>,

    /// With --until: give up (exit 3) after D
    #[arg(long, value_name = "D", value_parser = parse_duration, requires = "until")]
    pub timeout: Option<Duration>,
}

/// `observe --until` conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Until {
    Change,
    None,
    Any,
    Id(String),
}

fn parse_until(s: &str) -> Result<Until, String> {
    match s {
        "change" => Ok(Until::Change),
        "none" => Ok(Until::None),
        "any" => Ok(Until::Any),
        _ => match s.strip_prefix("id=") {
            Some(id) => Ok(Until::Id(id.to_string())),
            None => Err("expected change, none, any or id=ID".into()),
        },
    }
}

#[derive(Args, Debug)]
pub struct CounterArgs {
    /// The counter's node
    pub path: String,
    #[command(subcommand)]
    pub op: CounterOp,
}

#[derive(Subcommand, Debug)]
pub enum CounterOp {
    /// Print the value
    Get,
    /// Add N (may be negative) and print the new value
    Add {
        #[arg(allow_negative_numbers = true, value_name = "N")]
        delta: i64,
    },
    /// Set the value to N, whatever it was
    Set {
        #[arg(allow_negative_numbers = true, value_name = "N")]
        value: i64,
    },
    /// Set the value to NEW only if it is OLD (exit 5 otherwise)
    Cas {
        #[arg(allow_negative_numbers = true, value_name = "OLD")]
        old: i64,
        #[arg(allow_negative_numbers = true, value_name = "NEW")]
        new: i64,
    },
}

#[derive(Args, Debug)]
pub struct SharedCountArgs {
    /// The shared count's node
    pub path: String,
    #[command(subcommand)]
    pub op: SharedCountOp,
}

#[derive(Subcommand, Debug)]
pub enum SharedCountOp {
    /// Print the count
    Get,
    /// Set the count to N
    Set {
        #[arg(allow_negative_numbers = true, value_name = "N")]
        value: i32,
    },
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The recipe path
    pub path: String,
}

#[derive(Args, Debug)]
pub struct WatchArgs {
    /// The node to watch
    pub path: String,
    /// Watch the whole subtree
    #[arg(long)]
    pub recursive: bool,
    /// Miss nothing across reconnects: keep a stat-only cache of PATH and its children (with
    /// --recursive: its subtree) and print what a resync finds, flagged "resync": true
    #[arg(long)]
    pub exact: bool,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The longest duration taken: every timeout and grace is added to the clock's now, which
/// a longer one would overflow (a crash, after a lost hold with `--grace`).
const LONGEST: Duration = Duration::from_secs(100 * 365 * 86_400);

/// Durations like `10s`, `500ms`, `1m30s` (humantime), up to 100 years.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("{e} (expected a duration like 10s, 500ms or 1m30s)"))?;
    if d > LONGEST {
        return Err(format!(
            "{} is longer than the longest duration taken (100 years)",
            s.trim()
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("10").is_err());
    }

    /// A duration the clock cannot take is refused at parsing (exit 2), not added to the
    /// clock's now later (a crash: exit 70, after a lost hold with --grace).
    #[test]
    fn durations_the_clock_cannot_take_are_refused() {
        assert!(parse_duration("36500d").is_ok());
        let e = parse_duration("10000000000000000000s").unwrap_err();
        assert!(e.contains("100 years"), "{e}");
        assert!(Cli::try_parse_from([
            "zkr",
            "elect",
            "/e",
            "--timeout",
            "10000000000000000000s",
            "--",
            "true"
        ])
        .is_err());
    }

    /// `--lost-policy` belongs to what can lose a hold or leadership (lock, elect); member and
    /// discover register took it and ignored it.
    #[test]
    fn lost_policy_is_taken_only_where_it_means_something() {
        for cmd in [&["lock", "/l"][..], &["elect", "/e"][..]] {
            let mut argv = vec!["zkr"];
            argv.extend_from_slice(cmd);
            argv.extend(["--lost-policy", "session", "--", "true"]);
            assert!(Cli::try_parse_from(&argv).is_ok(), "{argv:?}");
        }
        for cmd in [
            &["member", "/g"][..],
            &["discover", "register", "/b", "s"][..],
        ] {
            let mut argv = vec!["zkr"];
            argv.extend_from_slice(cmd);
            argv.extend(["--lost-policy", "session", "--", "true"]);
            assert!(Cli::try_parse_from(&argv).is_err(), "{argv:?}");
        }
    }

    #[test]
    fn negative_numbers_are_values() {
        let cli = Cli::try_parse_from(["zkr", "counter", "/c", "add", "-2"]).unwrap();
        match cli.command {
            Command::Counter(CounterArgs {
                op: CounterOp::Add { delta },
                ..
            }) => assert_eq!(delta, -2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_command_comes_after_a_double_dash() {
        assert!(Cli::try_parse_from(["zkr", "lock", "/p", "true"]).is_err());
        let cli = Cli::try_parse_from(["zkr", "lock", "/p", "--", "sh", "-c", "x"]).unwrap();
        match cli.command {
            Command::Lock(a) => assert_eq!(a.run.command, ["sh", "-c", "x"]),
            other => panic!("{other:?}"),
        }
    }
}
