//! `trellis`: the command line for a Trellis server.
//!
//! Talks to the REST API only (`TRELLIS_URL`, `TRELLIS_API_KEY`), so it works against any
//! deployment. Every command prints a human view (tables, a progress bar) or, with `--json`,
//! the API's own JSON. Exit codes: 0 success; 1 the API refused the request, or a watched task
//! ended without succeeding; 2 a usage error, an unreadable file or no connection.

mod client;
mod commands;
mod files;
mod render;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The command line for a Trellis server: submit and watch tasks, inspect plans and
/// recoveries, manage tools, templates and keys.
#[derive(Debug, Parser)]
#[command(name = "trellis", version, about, long_about = None)]
pub struct Cli {
    /// The API's base address.
    #[arg(
        long,
        global = true,
        env = "TRELLIS_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    url: String,
    /// The API key (sent as `Authorization: Bearer …`).
    #[arg(long, global = true, env = "TRELLIS_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Print the API's JSON instead of tables (watching: one event per line).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Submit a task from a JSON or YAML file: a whole submit body, or a bare plan
    /// (`{"steps": [...]}`).
    Submit {
        file: PathBuf,
        /// Follow the task until it ends (exit 0 when it succeeds, 1 otherwise).
        #[arg(long)]
        watch: bool,
        /// The task's description (default: the body's, or the file's name).
        #[arg(long)]
        description: Option<String>,
        /// Priority (higher runs first).
        #[arg(long)]
        priority: Option<i32>,
        /// Idempotency key: submitting it again returns the first task.
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Follow a task until it ends: exit 0 when it succeeds, 1 otherwise.
    Watch { id: String },
    /// List tasks, newest first; or act on every task a filter matches (`trellis tasks rerun
    /// --status failed --since 2h --from first-failed`).
    #[command(args_conflicts_with_subcommands = true)]
    Tasks {
        #[command(subcommand)]
        bulk: Option<BulkCommand>,
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: u32,
        /// Only tasks older than this task id or RFC 3339 time (the next page).
        #[arg(long)]
        before: Option<String>,
    },
    /// A task's status, counters and the steps of its current plan.
    Show { id: String },
    /// A task's result: status, score and outputs.
    Result { id: String },
    /// A task's event log.
    Events {
        id: String,
        /// Only events after this sequence number.
        #[arg(long, default_value_t = 0)]
        after: i64,
    },
    /// Cancel a task.
    Cancel { id: String },
    /// Resume a task that needs intervention.
    Resume {
        id: String,
        /// JSON or YAML: `{"step_3": {"parameters": {...}, "tool": "..."}}`, or a whole resume
        /// body (`{"plan": ...}` or `{"step_overrides": ...}`).
        #[arg(long)]
        overrides: Option<PathBuf>,
        #[arg(long)]
        watch: bool,
    },
    /// Run an ended task again from one step (kept steps are not called again).
    Rerun {
        id: String,
        #[arg(long = "from")]
        from: String,
        /// JSON or YAML: `{"step_3": {"parameters": {...}, "tool": "..."}}`.
        #[arg(long)]
        overrides: Option<PathBuf>,
        #[arg(long)]
        watch: bool,
    },
    /// The price map LLM calls are costed from (admin).
    #[command(subcommand)]
    Prices(Prices),
    /// Bulk actions (`trellis tasks rerun|cancel|resume …` starts one).
    #[command(subcommand)]
    Bulk(Bulk),
    /// The tool registry, and holding a tool's steps (pause, resume).
    #[command(subcommand)]
    Tools(Tools),
    /// The workflow template registry.
    #[command(subcommand)]
    Templates(Registry),
    /// API keys.
    #[command(subcommand)]
    Keys(Keys),
    /// Steps waiting for a person: list, approve, reject.
    #[command(subcommand)]
    Approvals(Approvals),
    /// Cron schedules.
    #[command(subcommand)]
    Schedules(Schedules),
    /// MCP servers whose tools are Trellis tools.
    #[command(subcommand)]
    Mcp(Mcp),
    /// Post an event: every step waiting (`wait_event`) for this key and a matching payload
    /// goes on with the payload as its output.
    Event {
        key: String,
        /// The payload, as JSON (default `{}`).
        #[arg(long)]
        payload: Option<String>,
    },
    /// The live worker fleet.
    Workers,
    /// Task and step counts, and the recovery statistics.
    Stats,
}

/// A bulk action over the tasks a filter (or a list of ids) matches, applied by the workers.
#[derive(Debug, Subcommand)]
pub enum BulkCommand {
    /// Rerun every matching task from a step (default: its first failed step).
    Rerun {
        #[command(flatten)]
        filter: BulkFilter,
        /// `first-failed` (the default) or a step id.
        #[arg(long = "from", default_value = "first-failed")]
        from: String,
    },
    /// Cancel every matching task.
    Cancel {
        #[command(flatten)]
        filter: BulkFilter,
    },
    /// Resume every matching task that needs intervention.
    Resume {
        #[command(flatten)]
        filter: BulkFilter,
    },
}

/// Which tasks a bulk action is for, and how to run it.
#[derive(Debug, clap::Args)]
pub struct BulkFilter {
    #[arg(long)]
    status: Option<String>,
    /// Created at or after: an RFC 3339 time or a span before now (`2h`, `30m`, `7d`). With
    /// neither --since nor --until: the last 7 days.
    #[arg(long)]
    since: Option<String>,
    /// Created before: as --since.
    #[arg(long)]
    until: Option<String>,
    /// The description contains this text.
    #[arg(long)]
    q: Option<String>,
    /// Submitted from this template.
    #[arg(long)]
    template: Option<String>,
    /// The metadata contains this JSON object.
    #[arg(long)]
    metadata: Option<String>,
    /// These task ids instead of a filter (comma-separated).
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["status", "since", "until", "q", "template", "metadata"])]
    ids: Vec<String>,
    /// Count the matching tasks; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// A name for the action (shown in its listing).
    #[arg(long)]
    name: Option<String>,
    /// Follow its progress until it ends (exit 0 when it was applied to every task).
    #[arg(long)]
    wait: bool,
}

/// The price map: per model, per million tokens, each price valid from a time.
#[derive(Debug, Subcommand)]
pub enum Prices {
    /// Every model's prices, newest first.
    #[command(alias = "ls")]
    List,
    /// Set a model's prices from `--from` (default: now) on; calls recorded before keep
    /// their cost.
    Set {
        model: String,
        #[arg(long)]
        input: f64,
        #[arg(long)]
        output: f64,
        /// Cached input tokens (default: the input price).
        #[arg(long)]
        cached_input: Option<f64>,
        /// RFC 3339.
        #[arg(long = "from")]
        valid_from: Option<String>,
    },
}

/// Bulk actions: their progress, and stopping one.
#[derive(Debug, Subcommand)]
pub enum Bulk {
    /// Bulk actions, newest first.
    #[command(alias = "ls")]
    List,
    /// One bulk action's progress.
    Show { id: String },
    /// Stop a running bulk action (within one batch).
    Abort { id: String },
}

#[derive(Debug, Subcommand)]
pub enum Registry {
    /// List the entries.
    Ls,
    /// Register from a JSON or YAML file (one entry, or a list of entries).
    Add { file: PathBuf },
    /// Remove an entry.
    Rm { id: String },
}

#[derive(Debug, Subcommand)]
pub enum Tools {
    #[command(flatten)]
    Registry(Registry),
    /// Hold every step of the tool in the queue (no call, no attempt, no retry spent).
    Pause { id: String },
    /// Run the held steps again, in their places.
    Resume { id: String },
}

#[derive(Debug, Subcommand)]
pub enum Approvals {
    /// The open approvals (the inbox).
    Ls,
    /// Approve, optionally with edited parameters.
    Approve {
        wait_id: String,
        /// JSON or YAML file with the parameters to run with (a gated call), or the answer to
        /// the approval's form.
        #[arg(long)]
        parameters: Option<PathBuf>,
        #[arg(long)]
        comment: Option<String>,
    },
    /// Reject: the step fails with `approval_rejected`.
    Reject {
        wait_id: String,
        #[arg(long)]
        comment: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum Mcp {
    /// List the servers and the tools imported from each.
    Ls,
    /// Register a server (streamable HTTP) and import its tools.
    Import {
        id: String,
        endpoint: String,
        /// `Name=value` (a value may be `${secret.NAME}`); repeatable.
        #[arg(long = "header")]
        headers: Vec<String>,
    },
    /// Import a server's tools again.
    Refresh { id: String },
    /// Remove a server and its tools.
    Rm { id: String },
}

#[derive(Debug, Subcommand)]
pub enum Schedules {
    /// List schedules with their next tick.
    Ls,
    /// Register from a JSON or YAML file (`POST /api/v1/schedules`'s body).
    Add { file: PathBuf },
    /// Stop firing.
    Pause { id: String },
    /// Fire again from the next tick.
    Resume { id: String },
    /// Submit one task now.
    Trigger { id: String },
    /// Remove a schedule (its tasks are kept).
    Rm { id: String },
}

#[derive(Debug, Subcommand)]
pub enum Keys {
    /// Create a key (shown this once).
    Create {
        #[arg(long)]
        name: String,
        /// admin, operator or reader
        #[arg(long)]
        role: String,
    },
    /// List keys (never the key itself).
    Ls,
    /// Revoke a key at once.
    Revoke { id: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
