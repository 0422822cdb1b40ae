//! A unit ([`crate::proto`]) as the command line sees it: a command of its own (`strain ws`),
//! made of the shape every protocol command shares ([`super::flags::ProtocolCmd`]) and its own
//! flags, and the flags it adds to `strain origin`. The command line names no unit: the binary
//! hands it the list ([`super::run`]).

use std::marker::PhantomData;
use std::sync::Arc;

use clap::{Args, FromArgMatches};

use super::flags::ProtocolCmd;
use super::protocol::Protocol;
use super::CliError;
use crate::origin::unit::Unit as OriginUnit;

/// A unit's part of the command line.
pub trait Unit: Sync {
    /// Its command's name: `ws`.
    fn name(&self) -> &'static str;
    /// Its command, flags and all (defined to clap only when it runs, as the others).
    fn command(&self) -> clap::Command;
    /// Runs its command from the matches of its flags.
    fn run(&self, matches: &clap::ArgMatches) -> Result<i32, CliError>;
    /// Adds its flags to `strain origin`.
    fn origin_args(&self, cmd: clap::Command) -> clap::Command {
        cmd
    }
    /// What its `strain origin` flags ask the origin to serve, if anything (`shared`: the
    /// flags every origin has, such as `--status`).
    fn origin(&self, _matches: &clap::ArgMatches, _shared: &Shared) -> Result<Option<Arc<dyn OriginUnit>>, CliError> {
        Ok(None)
    }
}

/// What a unit's `strain origin` flags make.
pub trait OriginFlags: Args + FromArgMatches {
    /// What the flags ask the origin to serve, if anything, beside `shared`, the flags every
    /// origin has.
    fn unit(self, shared: &Shared) -> Result<Option<Arc<dyn OriginUnit>>, CliError>;
}

/// The flags every origin has.
pub use super::flags::OriginFlags as Shared;

/// The origin flags of a unit that adds none.
#[derive(Debug, Args)]
pub struct NoOriginFlags {}

impl OriginFlags for NoOriginFlags {
    fn unit(self, _shared: &Shared) -> Result<Option<Arc<dyn OriginUnit>>, CliError> {
        Ok(None)
    }
}

/// A unit's part of the command line from its flags' types: `P` its command's own flags, `O`
/// its flags of `strain origin`.
pub struct Command<P, O = NoOriginFlags> {
    name: &'static str,
    about: &'static str,
    flags: PhantomData<fn() -> (P, O)>,
}

impl<P, O> Command<P, O> {
    /// The command `name`, described as `about` in `strain --help`.
    pub const fn new(name: &'static str, about: &'static str) -> Self {
        Command { name, about, flags: PhantomData }
    }
}

impl<P: Protocol + 'static, O: OriginFlags + 'static> Unit for Command<P, O> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn command(&self) -> clap::Command {
        // Its flags are defined to clap only when it runs, as the others' (see `Deferred`),
        // and shown as the protocol says.
        let about = clap::Command::new(self.name).about(self.about);
        about.defer(|cmd| P::adjust(super::flags::keep_about(cmd, <Box<ProtocolCmd<P>> as Args>::augment_args)))
    }

    fn run(&self, matches: &clap::ArgMatches) -> Result<i32, CliError> {
        let f = ProtocolCmd::<P>::from_arg_matches(matches).map_err(|e| CliError::Usage(e.to_string()))?;
        super::protocol::run(&f)
    }

    fn origin_args(&self, cmd: clap::Command) -> clap::Command {
        // Under its own heading, and the origin's description kept.
        super::flags::keep_about(cmd, O::augment_args).next_help_heading(None::<&str>)
    }

    fn origin(&self, matches: &clap::ArgMatches, shared: &Shared) -> Result<Option<Arc<dyn OriginUnit>>, CliError> {
        O::from_arg_matches(matches).map_err(|e| CliError::Usage(e.to_string()))?.unit(shared)
    }
}
