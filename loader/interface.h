/* SPDX-License-Identifier: GPL-2.0 */
/*
 * iouring-bpf's interface in one place: every command, subcommand and
 * option (interface.c). The help texts' synopses and option lines, each
 * command's getopt_long() options and `iouring-bpf help --options` come
 * from it; selftests/harness/tool_interface.sh checks the man page and the
 * bash completion against that dump.
 */
#ifndef IOURING_BPF_INTERFACE_H
#define IOURING_BPF_INTERFACE_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

/*
 * What the parser returns for each option: a character for one with a
 * short form, a number above any character for the others.
 */
enum iface_opt_id {
	OPT_HELP = 'h',
	OPT_JSON = 'j',
	OPT_DEBUG = 'd',
	OPT_VERSION = 'V',
	OPT_RING = 256,			/* load */
	OPT_PIN,
	OPT_ENTRIES,
	OPT_SET,
	OPT_PID,			/* inspect */
	OPT_TARGET,			/* ublk add */
	OPT_FILE,
	OPT_POLICY,
	OPT_SIZE,
	OPT_QUEUES,
	OPT_DEPTH,
	OPT_ID,
	OPT_PATH,
	OPT_FORCE,			/* ublk del */
	OPT_ALLOW,			/* sandbox */
	OPT_DENY_REST,
	OPT_DENY,
	OPT_SOCKET_FAMILY,
	OPT_CONNECT_FAMILY,
	OPT_OPEN_DENY,
	OPT_OPEN_RESOLVE,
	OPT_PROFILE,
	OPT_OPTIONS,			/* help (hidden) */
};

enum iface_arg {
	IFACE_ARG_NONE,
	IFACE_ARG_REQUIRED,	/* --opt VALUE or --opt=VALUE */
	/*
	 * --opt alone, --opt=VALUE, or --opt VALUE when the next word does
	 * not start with '-' (load --ring [PID:FD])
	 */
	IFACE_ARG_OPTIONAL,
};

#define IFACE_NEEDED	(1U << 0)	/* the command needs it: no [] in a synopsis */
#define IFACE_REPEAT	(1U << 1)	/* may be given more than once: "..." */
#define IFACE_FORM	(1U << 2)	/* replaces the operands: a synopsis line of its own */
#define IFACE_HIDDEN	(1U << 3)	/* in no help text and not in the dump */

struct iface_command {
	const char *command;
	const char *sub;	/* NULL: the command itself (or a group of subcommands) */
	const char *operands;	/* before the options in a synopsis ("PROG.o"), or NULL */
	const char *trailing;	/* after them ("-- PROGRAM [ARG]..."), or NULL */
	const char *summary;	/* what it does, for the list of commands */
	bool group;		/* only its subcommands run: no synopsis line of its own */
};

struct iface_option {
	const char *command;	/* NULL: a global option, taken before the command */
	const char *sub;
	const char *name;	/* the long name, without "--" */
	enum iface_opt_id id;
	enum iface_arg arg;
	const char *arg_name;	/* "PID:FD", "daemon|kernel" (the values there are) */
	unsigned int flags;	/* IFACE_* */
	const char *help;	/* one line; the printer wraps it */
};

/* The command (sub NULL) or subcommand, or NULL if there is none such. */
const struct iface_command *iface_command_find(const char *command, const char *sub);

/*
 * Help texts. iface_print_synopsis(): a command's synopsis lines (for a
 * group its subcommands'), the first after first ("usage: iouring-bpf "),
 * the others after prefix ("       iouring-bpf "). iface_print_options():
 * its option lines, -h included. iface_print_summaries(): the commands (or
 * a group's subcommands) with what each does.
 */
void iface_print_synopsis(FILE *f, const char *first, const char *prefix, const char *command,
			  const char *sub);
/* "usage: iouring-bpf COMMAND ...", then "       iouring-bpf COMMAND ..." */
void iface_print_usage(FILE *f, const char *command, const char *sub);
void iface_print_options(FILE *f, const char *command, const char *sub);
void iface_print_summaries(FILE *f, const char *group);
void iface_print_global_options(FILE *f);

/* `iouring-bpf help --options`: the format is in interface.c. */
void iface_dump(FILE *f);

/*
 * A command's argument parser: getopt_long() with the command's options
 * from the table, -h/--help included, so --opt=value works everywhere.
 * argv is what the command got: argv[0] is its first argument and
 * argv[-1] its own name (getopt_long() skips that as a program name).
 */
#define IFACE_MAX_OPTIONS	16

/* iface_parse_next()'s answers besides an option's enum iface_opt_id */
enum iface_event {
	IFACE_END = -1,		/* nothing left */
	IFACE_OPERAND = 1,	/* an operand: value */
	IFACE_NO_VALUE = ':',	/* opt needs a value: value is "--NAME" */
	IFACE_UNKNOWN = '?',	/* value is the word that is no option here */
};

/* parse flags */
#define IFACE_STOP_AT_OPERAND	(1U << 0)	/* sandbox: the rest is a program's */

struct iface_parser {
	int argc;
	char **argv;			/* argv[0] is the command's name */
	unsigned int flags;
	bool done;			/* getopt_long() is through */
	int next;			/* argv index of the next word not parsed */
	const struct iface_option *opt;	/* the option found (also for IFACE_NO_VALUE) */
	const char *value;		/* its value, the operand, or the bad word */
	char word[80];			/* "--NAME" or "-C" for messages */
	struct option longopts[IFACE_MAX_OPTIONS + 2];
	const struct iface_option *opts[IFACE_MAX_OPTIONS + 2];
	char shortopts[8];
};

void iface_parse_init(struct iface_parser *p, const char *command, const char *sub,
		      int argc, char **argv, unsigned int flags);
int iface_parse_next(struct iface_parser *p);
/* The words not parsed yet (after IFACE_END with IFACE_STOP_AT_OPERAND: the program). */
char **iface_parse_rest(const struct iface_parser *p, int *count);

#endif
