//! The shell's usage and help texts, as `hadoop fs` prints them: the whole
//! usage (`-usage`, or no command), one command's usage line (`-usage ls`,
//! and after a usage error, as Hadoop's `FsShell` prints the failing
//! command's line only), and help (`-help [cmd ...]`: usage then what
//! each command does, in Hadoop's layout `USAGE:\tTEXT`, then `\t\tTEXT`).
//! These need no file system, so they answer before anything is dialed.

use std::io::Write;

use super::{COMMANDS, EXIT_USAGE};

/// The usage text of `raftfs dfs`.
pub const USAGE: &str = "Usage: raftfs dfs [generic options]
\t[-appendToFile <localsrc> ... <dst>]
\t[-cat [-ignoreCrc] <src> ...]
\t[-checksum <src> ...]
\t[-chgrp [-R] GROUP PATH...]
\t[-chmod [-R] <MODE[,MODE]... | OCTALMODE> PATH...]
\t[-chown [-R] [OWNER][:[GROUP]] PATH...]
\t[-concat <target path> <src path> <src path> ...]
\t[-copyFromLocal [-f] [-p] [-l] [-d] <localsrc> ... <dst>]
\t[-copyToLocal [-f] [-p] [-crc] [-ignoreCrc] <src> ... <localdst>]
\t[-count [-q] [-h] <path> ...]
\t[-cp [-f] [-p] [-d] <src> ... <dst>]
\t[-du [-s] [-h] <path> ...]
\t[-get [-f] [-p] [-crc] [-ignoreCrc] <src> ... <localdst>]
\t[-help [cmd ...]]
\t[-ls [-d] [-h] [-R] [<path> ...]]
\t[-mkdir [-p] <path> ...]
\t[-mv <src> ... <dst>]
\t[-put [-f] [-p] [-l] [-d] <localsrc> ... <dst>]
\t[-rm [-f] [-r|-R] [-skipTrash] <src> ...]
\t[-rmdir [--ignore-fail-on-non-empty] <dir> ...]
\t[-setrep [-R] [-w] <rep> <path> ...]
\t[-stat [format] <path> ...]
\t[-tail [-f] <file>]
\t[-test -[defsz] <path>]
\t[-touchz <path> ...]
\t[-truncate [-w] <length> <path> ...]
\t[-usage [cmd ...]]

Generic options: --fs raftfs://host:port[,host:port...] (or env RAFTFS_FS), --user NAME (or env RAFTFS_USER)";

/// What each command does (`-help CMD`), one line per entry.
const DESCRIPTIONS: [(&str, &str); 27] = [
    ("appendToFile", "Appends the contents of the local files to the file <dst>, creating it\nif it does not exist. A <localsrc> of - reads standard input."),
    ("cat", "Prints the contents of each file to standard output."),
    ("checksum", "Prints each file's checksum: its algorithm (MD5-of-MD5-of-CRC32C, as\nHDFS computes it) and value in hex."),
    ("chgrp", "Sets the group of each path (as -chown :GROUP).\n-R: recurse into directories."),
    ("chmod", "Sets the permission of each path, as an octal mode (755) or symbolic\nmodes (u+x,go-w). No umask applies.\n-R: recurse into directories."),
    ("chown", "Sets the owner and/or group of each path; only the superuser may\nchange an owner.\n-R: recurse into directories."),
    ("concat", "Concatenate existing source files into the target file. Target file and\nsource files should be in the same directory. Blocks move; no data is\ncopied."),
    ("copyFromLocal", "Copies local files into the file system (as -put)."),
    ("copyToLocal", "Copies files to the local file system (as -get)."),
    ("count", "Counts the directories, files and bytes under each path. Columns:\nDIR_COUNT FILE_COUNT CONTENT_SIZE PATHNAME; with -q first QUOTA\nREMAINING_QUOTA SPACE_QUOTA REMAINING_SPACE_QUOTA.\n-h: sizes in human-readable units."),
    ("cp", "Copies files, and directories with everything below them, to <dst>.\n-f: overwrite destination files that exist."),
    ("du", "Shows the bytes of each file under each path, and what they take\nwith every replica.\n-s: one total per path.\n-h: human-readable units."),
    ("get", "Copies files to the local file system.\n-f: overwrite the local file if it exists."),
    ("help", "Displays help for the given commands, or for all of them."),
    ("ls", "Lists each directory's entries, or the file itself: permission,\nreplication, owner, group, size, modification time and path.\n-d: list directories as plain files.\n-h: sizes in human-readable units.\n-R: recurse into subdirectories."),
    ("mkdir", "Creates each directory.\n-p: create missing parents, and do not fail if it exists."),
    ("mv", "Moves (renames) files and directories to <dst>; with several\nsources, <dst> must be a directory."),
    ("put", "Copies local files (- reads standard input) into the file system.\n-f: overwrite the destination if it exists."),
    ("rm", "Deletes each file.\n-f: say nothing and succeed if a path does not exist.\n-r, -R: delete directories and everything below them."),
    ("rmdir", "Deletes each empty directory.\n--ignore-fail-on-non-empty: do not fail on a directory that has entries."),
    ("setrep", "Sets the replication of each file; for a directory, of every file\nbelow it."),
    ("stat", "Prints each path's status in <format>: %a octal permission, %A\nsymbolic, %b size, %F type, %g group, %n name, %o block size, %r\nreplication, %u owner, %x/%X access time, %y/%Y modification time\n(as a date, or in ms since the epoch). By default %y."),
    ("tail", "Prints the last kilobyte of the file.\n-f: keep printing what is appended."),
    ("test", "Answers a question about <path> with the exit status (0 yes, 1 no):\n-d  is it a directory?\n-e  does it exist?\n-f  is it a file?\n-s  is it a file longer than zero bytes?\n-z  is it a file of zero bytes?"),
    ("touchz", "Creates each file empty; fails on a file that is not empty."),
    ("truncate", "Truncate all files that match the specified file pattern to the\nspecified length.\n-w: Requests that the command wait for block recovery to complete, if\nnecessary."),
    ("usage", "Displays the usage for the given commands, or for all of them."),
];

/// The entry of command `cmd` (`-safemode`) in a tool's usage text, which
/// has one line per command after its first: the bracketed
/// `[-safemode <enter | leave | get | wait>]`, without a note after it.
/// What Hadoop's tools print as that command's usage (`dfs`, `dfsadmin`
/// and `haadmin` all use it).
pub fn usage_entry<'u>(usage: &'u str, cmd: &str) -> Option<&'u str> {
    usage.lines().skip(1).find_map(|l| {
        let l = l.trim();
        let entry = &l[..=l.rfind(']')?];
        let name = entry.strip_prefix('[')?.split([' ', ']']).next()?;
        (name == cmd).then_some(entry)
    })
}

/// The usage of `cmd` (without its dash): `-mkdir [-p] <path> ...`.
pub fn command_usage(cmd: &str) -> Option<&'static str> {
    let cmd = if cmd == "h" { "help" } else { cmd };
    usage_entry(USAGE, &format!("-{cmd}"))?
        .strip_prefix('[')?
        .strip_suffix(']')
}

/// `Usage: raftfs dfs [generic options] -CMD ...`, the line Hadoop prints
/// after a usage error in `-CMD`.
pub fn command_usage_line(cmd: &str) -> Option<String> {
    let prefix = USAGE.lines().next().expect("USAGE has a first line");
    command_usage(cmd).map(|u| format!("{prefix} {u}"))
}

fn description(cmd: &str) -> &'static str {
    let cmd = if cmd == "h" { "help" } else { cmd };
    DESCRIPTIONS
        .iter()
        .find(|(c, _)| *c == cmd)
        .map(|(_, d)| *d)
        .unwrap_or_default()
}

fn write_help(out: &mut dyn Write, cmd: &str) {
    let usage = command_usage(cmd).unwrap_or_default();
    for (i, line) in description(cmd).lines().enumerate() {
        if i == 0 {
            let _ = writeln!(out, "{usage}:\t{line}");
        } else {
            let _ = writeln!(out, "\t\t{line}");
        }
    }
}

/// Answer what needs no file system: no command (the usage, on `err`,
/// status 255), `-usage`/`-help` (with or without commands), and an
/// unknown command (`-x: Unknown command`, and Hadoop's hint when a
/// command was typed without its dash). `None`: the command is to run.
pub fn offline(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> Option<i32> {
    let Some(first) = args.first() else {
        let _ = writeln!(err, "{USAGE}");
        return Some(EXIT_USAGE);
    };
    let cmd = first.strip_prefix('-').unwrap_or(first);
    if !first.starts_with('-') || !COMMANDS.contains(&cmd) {
        let _ = writeln!(err, "{first}: Unknown command");
        if COMMANDS.contains(&cmd) {
            let _ = writeln!(err, "Did you mean -{cmd}?  This command begins with a dash.");
        }
        return Some(EXIT_USAGE);
    }
    let help = match cmd {
        "help" | "h" => true,
        "usage" => false,
        _ => return None,
    };
    let names = &args[1..];
    if names.is_empty() {
        let _ = writeln!(out, "{USAGE}");
        if help {
            let _ = writeln!(out);
            for (c, _) in DESCRIPTIONS {
                write_help(out, c);
                let _ = writeln!(out);
            }
        }
        return Some(0);
    }
    for name in names {
        let name = name.strip_prefix('-').unwrap_or(name);
        if command_usage(name).is_none() {
            let _ = writeln!(err, "{first}: `{name}': Unknown command");
            let _ = writeln!(err, "{}", command_usage_line(cmd).unwrap_or_default());
            return Some(EXIT_USAGE);
        }
        if help {
            write_help(out, name);
        } else {
            let _ = writeln!(out, "{}", command_usage_line(name).unwrap_or_default());
        }
    }
    Some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_has_a_usage_line_and_a_description() {
        for c in COMMANDS {
            assert!(command_usage(c).is_some(), "usage of {c}");
            assert!(!description(c).is_empty(), "description of {c}");
        }
        assert_eq!(
            command_usage_line("mkdir").unwrap(),
            "Usage: raftfs dfs [generic options] -mkdir [-p] <path> ..."
        );
    }
}
