// SPDX-License-Identifier: GPL-2.0
/*
 * iouring-bpf's commands and options: the one description the help texts,
 * the argument parsers and `iouring-bpf help --options` are made from, so
 * that none of them can name an option another lacks. The man page and the
 * bash completion are checked against the dump by
 * selftests/harness/tool_interface.sh.
 */
#include <string.h>

#include "interface.h"
#include "loader.h"
#include "ublk_cmd.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const struct iface_command commands[] = {
	{ "load", NULL, "PROG.o", NULL,
	  "attach a policy to a ring another process owns (PID:FD) and pin it under "
	  PIN_ROOT_DEFAULT "/NAME; or, with --ring alone, create a ring, run the policy "
	  "until it stops and print its exit status and counters", false },
	{ "list", NULL, NULL, NULL, "pinned policies: owner, programs, runs, counters", false },
	{ "unload", NULL, "NAME", NULL, "detach and unpin a pinned policy", false },
	{ "inspect", NULL, "PROG.o", NULL,
	  "what a policy object holds and needs, and whether this kernel has it; with "
	  "--pid, what restricts the io_uring rings of a process", false },
	{ "ublk", NULL, NULL, NULL,
	  "ublk block devices served by BPF policies in the kernel (loop, split, your "
	  "own) or by a copying loop in user space (loop-user)", true },
	{ "ublk", "add", NULL, NULL,
	  "create a device and start its daemon; prints 'ublk ID /dev/ublkbID'", false },
	{ "ublk", "list", NULL, NULL,
	  "every ublk device: state, queues, depth, flags, daemon, target, files", false },
	{ "ublk", "del", "ID", NULL, "stop and delete a device", false },
	{ "sandbox", NULL, NULL, "-- PROGRAM [ARG]...",
	  "run a program with its io_uring requests filtered (and those of everything "
	  "it forks and execs)", false },
	{ "help", NULL, NULL, NULL, "this text", false },
};

#define REQ IFACE_ARG_REQUIRED
static const struct iface_option options[] = {
	/* before the command (and, -j and -d, anywhere up to a "--") */
	{ NULL, NULL, "json", OPT_JSON, IFACE_ARG_NONE, NULL, 0,
	  "JSON output (errors too: {\"error\": ..., \"errno\": ...})" },
	{ NULL, NULL, "debug", OPT_DEBUG, IFACE_ARG_NONE, NULL, 0,
	  "print libbpf's debug output, and whole verifier logs" },
	{ NULL, NULL, "help", OPT_HELP, IFACE_ARG_NONE, NULL, 0, "this text" },
	{ NULL, NULL, "version", OPT_VERSION, IFACE_ARG_NONE, NULL, 0,
	  "the version, and libbpf's" },

	{ "load", NULL, "ring", OPT_RING, IFACE_ARG_OPTIONAL, "PID:FD", IFACE_NEEDED,
	  "with PID:FD: attach to ring FD of process PID and pin the policy; alone: "
	  "run the policy on a ring of our own until it stops" },
	{ "load", NULL, "pin", OPT_PIN, REQ, "NAME", 0,
	  "the pin's name (with --ring PID:FD; default: the object's file name "
	  "without .bpf.o)" },
	{ "load", NULL, "entries", OPT_ENTRIES, REQ, "N", 0,
	  "entries of our own ring (--ring alone): a power of two up to 32768, "
	  "default 64" },
	{ "load", NULL, "set", OPT_SET, REQ, "VAR=VALUE", IFACE_REPEAT,
	  "set an integer global (decimal, 0x hex, true/false); see 'iouring-bpf "
	  "inspect PROG.o' for what can be set" },

	{ "inspect", NULL, "pid", OPT_PID, REQ, "PID", IFACE_FORM,
	  "what is in force on each io_uring ring of process PID instead: "
	  "no_new_privs, allowlists, request filters by opcode" },

	{ "ublk", "add", "target", OPT_TARGET, REQ, "loop|split|loop-user|bpf", IFACE_NEEDED,
	  "what serves the device (see targets)" },
	{ "ublk", "add", "file", OPT_FILE, REQ, "FILE", IFACE_REPEAT,
	  "backing file: a regular file or block device whose size is a non-zero "
	  "multiple of 512 bytes" },
	{ "ublk", "add", "policy", OPT_POLICY, REQ, "OBJ.bpf.o", 0,
	  "the policy object, for --target bpf" },
	{ "ublk", "add", "size", OPT_SIZE, REQ, "BYTES", 0,
	  "device size (suffixes K, M, G, T: powers of 1024); default: the file's "
	  "size (split, bpf: the files' sizes added up); at most that for loop, split "
	  "and loop-user; required for bpf without files" },
	{ "ublk", "add", "queues", OPT_QUEUES, REQ, "N", 0,
	  "hardware queues, 1.." STR(UBLK_MAX_QUEUES) " (default 1; at most one per CPU)" },
	{ "ublk", "add", "depth", OPT_DEPTH, REQ, "D", 0,
	  "requests in flight per queue, 1.." STR(IOU_UBLK_MAX_DEPTH) " (default 64)" },
	{ "ublk", "add", "id", OPT_ID, REQ, "N", 0,
	  "device number (default: the first free one)" },
	{ "ublk", "add", "path", OPT_PATH, REQ, "daemon|kernel", 0,
	  "BPF targets: 'daemon' (default) serves every request from the queues' "
	  "io_uring; 'kernel' also attaches the policy's ublk_bpf_ops hook "
	  "(IOURING_BPF_UBLK_HOOK()), which takes requests in the driver's queue_rq() "
	  "and serves them from a worker of the device, without the daemon" },

	{ "ublk", "del", "force", OPT_FORCE, IFACE_ARG_NONE, NULL, 0,
	  "delete a device another program serves (no state file of ours) too; its "
	  "server is never signalled" },

	{ "sandbox", NULL, "allow", OPT_ALLOW, REQ, "OPS", 0,
	  "allow these opcodes (comma-separated names: read,write,recv,send,...)" },
	{ "sandbox", NULL, "deny-rest", OPT_DENY_REST, IFACE_ARG_NONE, NULL, 0,
	  "deny every opcode --allow does not name" },
	{ "sandbox", NULL, "deny", OPT_DENY, REQ, "OPS", 0, "deny these opcodes" },
	{ "sandbox", NULL, "socket-family", OPT_SOCKET_FAMILY, REQ, "FAMS", 0,
	  "IORING_OP_SOCKET only for these families (unix,inet,inet6,netlink,packet "
	  "or numbers)" },
	{ "sandbox", NULL, "connect-family", OPT_CONNECT_FAMILY, REQ, "FAMS", 0,
	  "IORING_OP_CONNECT only to these families" },
	{ "sandbox", NULL, "open-deny", OPT_OPEN_DENY, REQ, "FLAGS", 0,
	  "deny OPENAT/OPENAT2 with any of these flags (creat,trunc,excl,append,"
	  "tmpfile,path,wronly,rdwr)" },
	{ "sandbox", NULL, "open-resolve", OPT_OPEN_RESOLVE, REQ, "FLAGS", 0,
	  "OPENAT2 only with these RESOLVE_* flags (in_root,beneath,no_symlinks,"
	  "no_magiclinks,no_xdev); every OPENAT is denied then" },
	{ "sandbox", NULL, "profile", OPT_PROFILE, REQ, "FILE", 0,
	  "first: options from FILE, a JSON object whose keys are the options above "
	  "(\"allow\": [\"read\"], \"deny-rest\": true); those after it add to or "
	  "replace them" },

	{ "help", NULL, "options", OPT_OPTIONS, IFACE_ARG_NONE, NULL, IFACE_HIDDEN,
	  "every command and option, one a line (for the tests)" },
};
#undef REQ

/* every command has -h/--help; the table does not repeat it */
static const struct iface_option command_help = {
	NULL, NULL, "help", OPT_HELP, IFACE_ARG_NONE, NULL, 0, "this text"
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define WRAP_COLUMN 79		/* help text stays within 80 columns */
#define OPTION_COLUMN 22	/* longer option names get a line of their own */

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

const struct iface_command *iface_command_find(const char *command, const char *sub)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (same(commands[i].command, command) && same(commands[i].sub, sub))
			return &commands[i];
	return NULL;
}

/*
 * Words (or synopsis items) in a line that wraps at WRAP_COLUMN; lines
 * after the first start at indent.
 */
struct line {
	FILE *f;
	int at, indent;
	bool used;	/* something is on the line: the next item needs a space */
};

static void put_item(struct line *l, const char *item, int len)
{
	if (l->used && l->at + 1 + len > WRAP_COLUMN) {
		fprintf(l->f, "\n%*s", l->indent, "");
		l->at = l->indent;
		l->used = false;
	}
	if (l->used) {
		fputc(' ', l->f);
		l->at++;
	}
	fprintf(l->f, "%.*s", len, item);
	l->at += len;
	l->used = true;
}

static void put_words(struct line *l, const char *text)
{
	while (*text) {
		int n = strcspn(text, " ");

		if (n)
			put_item(l, text, n);
		text += n;
		text += strspn(text, " ");
	}
}

/* "--ring [PID:FD]", "--pin NAME", "--force" */
static void option_label(const struct iface_option *o, char *buf, size_t size)
{
	snprintf(buf, size, "--%s%s%s%s%s", o->name, o->arg == IFACE_ARG_NONE ? "" : " ",
		 o->arg == IFACE_ARG_OPTIONAL ? "[" : "", o->arg_name ? o->arg_name : "",
		 o->arg == IFACE_ARG_OPTIONAL ? "]" : "");
}

static bool option_of(const struct iface_option *o, const char *command, const char *sub)
{
	return same(o->command, command) && same(o->sub, sub) && !(o->flags & IFACE_HIDDEN);
}

/* first: before the first line ("usage: iouring-bpf "), prefix: before the others */
static void print_command_synopsis(FILE *f, const char *first, const char *prefix,
				   const struct iface_command *c)
{
	char name[64], item[128];
	struct line l = { .f = f };

	snprintf(name, sizeof(name), "%s%s%s", c->command, c->sub ? " " : "", c->sub ? c->sub : "");
	fprintf(f, "%s%s", first, name);
	/* continuation lines start under the first operand or option */
	l.at = strlen(first) + strlen(name);
	l.indent = l.at + 1;
	l.used = true;
	if (c->operands)
		put_words(&l, c->operands);
	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		const struct iface_option *o = &options[i];
		char label[96];

		if (!option_of(o, c->command, c->sub) || o->flags & IFACE_FORM)
			continue;
		option_label(o, label, sizeof(label));
		snprintf(item, sizeof(item), "%s%s%s%s", o->flags & IFACE_NEEDED ? "" : "[", label,
			 o->flags & IFACE_NEEDED ? "" : "]", o->flags & IFACE_REPEAT ? "..." : "");
		put_item(&l, item, strlen(item));
	}
	if (c->trailing)
		put_item(&l, c->trailing, strlen(c->trailing));
	fputc('\n', f);
	/* an option that replaces the operands is a form of the command of its own */
	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		if (!option_of(&options[i], c->command, c->sub) || !(options[i].flags & IFACE_FORM))
			continue;
		option_label(&options[i], item, sizeof(item));
		fprintf(f, "%s%s %s\n", prefix, name, item);
	}
}

void iface_print_synopsis(FILE *f, const char *first, const char *prefix, const char *command,
			  const char *sub)
{
	const struct iface_command *c = iface_command_find(command, sub);

	if (c && !c->group) {
		print_command_synopsis(f, first, prefix, c);
		return;
	}
	for (size_t i = 0; c && i < ARRAY_SIZE(commands); i++) {
		if (same(commands[i].command, command) && commands[i].sub) {
			print_command_synopsis(f, first, prefix, &commands[i]);
			first = prefix;
		}
	}
}

void iface_print_usage(FILE *f, const char *command, const char *sub)
{
	char first[64], prefix[64];

	snprintf(first, sizeof(first), "usage: %s ", prog_name);
	snprintf(prefix, sizeof(prefix), "       %s ", prog_name);
	iface_print_synopsis(f, first, prefix, command, sub);
}

static void print_option_line(FILE *f, const struct iface_option *o)
{
	char label[96];
	struct line l = { .f = f, .indent = 2 + OPTION_COLUMN + 1 };

	if (o->id < 256)
		snprintf(label, sizeof(label), "-%c, --%s", (char)o->id, o->name);
	else
		option_label(o, label, sizeof(label));
	if (strlen(label) > OPTION_COLUMN)
		fprintf(f, "  %s\n%*s", label, l.indent, "");
	else
		fprintf(f, "  %-*s ", OPTION_COLUMN, label);
	l.at = l.indent;
	put_words(&l, o->help);
	fputc('\n', f);
}

void iface_print_options(FILE *f, const char *command, const char *sub)
{
	for (size_t i = 0; i < ARRAY_SIZE(options); i++)
		if (option_of(&options[i], command, sub))
			print_option_line(f, &options[i]);
	print_option_line(f, &command_help);
}

void iface_print_global_options(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(options); i++)
		if (option_of(&options[i], NULL, NULL))
			print_option_line(f, &options[i]);
}

void iface_print_summaries(FILE *f, const char *group)
{
	const int column = group ? 9 : 12;	/* "  sandbox   ", "  list   " */

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		const struct iface_command *c = &commands[i];
		const char *name = group ? c->sub : c->command;
		struct line l = { .f = f, .at = column, .indent = column };

		if (group ? !same(c->command, group) || !c->sub : c->sub != NULL)
			continue;
		fprintf(f, "  %-*s", column - 2, name);
		put_words(&l, c->summary);
		fputc('\n', f);
	}
}

/*
 * `iouring-bpf help --options` prints what the tool accepts, one item a
 * line, in the table's order:
 *
 *   COMMAND[ SUB]                     a command or subcommand
 *   COMMAND[ SUB] --LONG[ ARG][ -S]   an option of it
 *
 * ARG names the option's value: "[ARG]" when the value is optional, and
 * "a|b|c" when these are the values there are. -S is the short form. The
 * options taken before any command have the COMMAND "iouring-bpf". A
 * command's own line comes first, then its options' (--help last); hidden
 * options (this one) are left out. Words are separated by one space.
 */
static void dump_option(FILE *f, const char *prefix, const struct iface_option *o)
{
	char label[96];

	option_label(o, label, sizeof(label));
	fprintf(f, "%s %s", prefix, label);
	if (o->id < 256)
		fprintf(f, " -%c", (char)o->id);
	fputc('\n', f);
}

void iface_dump(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(options); i++)
		if (option_of(&options[i], NULL, NULL))
			dump_option(f, "iouring-bpf", &options[i]);
	for (size_t c = 0; c < ARRAY_SIZE(commands); c++) {
		const struct iface_command *cmd = &commands[c];
		char name[64];

		snprintf(name, sizeof(name), "%s%s%s", cmd->command, cmd->sub ? " " : "",
			 cmd->sub ? cmd->sub : "");
		fprintf(f, "%s\n", name);
		for (size_t i = 0; i < ARRAY_SIZE(options); i++)
			if (option_of(&options[i], cmd->command, cmd->sub))
				dump_option(f, name, &options[i]);
		dump_option(f, name, &command_help);
	}
}

static void parser_add(struct iface_parser *p, size_t *n, const struct iface_option *o)
{
	static const int has_arg[] = {
		[IFACE_ARG_NONE] = no_argument,
		[IFACE_ARG_REQUIRED] = required_argument,
		[IFACE_ARG_OPTIONAL] = optional_argument,
	};
	static const char *const colons[] = {
		[IFACE_ARG_NONE] = "",
		[IFACE_ARG_REQUIRED] = ":",
		[IFACE_ARG_OPTIONAL] = "::",
	};
	size_t len = strlen(p->shortopts);

	/* the table holds at most IFACE_MAX_OPTIONS per command: interface.h */
	if (*n == IFACE_MAX_OPTIONS + 1)
		return;
	p->opts[*n] = o;
	p->longopts[*n] = (struct option){ o->name, has_arg[o->arg], NULL, o->id };
	(*n)++;
	if (o->id < 256 && len + 3 < sizeof(p->shortopts))
		snprintf(p->shortopts + len, sizeof(p->shortopts) - len, "%c%s", (char)o->id,
			 colons[o->arg]);
}

void iface_parse_init(struct iface_parser *p, const char *command, const char *sub,
		      int argc, char **argv, unsigned int flags)
{
	size_t n = 0;

	memset(p, 0, sizeof(*p));
	p->argc = argc + 1;
	p->argv = argv - 1;
	p->flags = flags;
	p->next = 1;
	/*
	 * "+": options end at the first operand (a program and its arguments
	 * follow); "-": operands come back in order, between options, so that
	 * --ring can look at the word after it. ":": a missing value is told
	 * apart from an unknown option, and getopt_long() prints nothing.
	 */
	snprintf(p->shortopts, sizeof(p->shortopts), "%c:",
		 flags & IFACE_STOP_AT_OPERAND ? '+' : '-');
	for (size_t i = 0; i < ARRAY_SIZE(options); i++)
		if (same(options[i].command, command) && same(options[i].sub, sub))
			parser_add(p, &n, &options[i]);
	if (command)
		parser_add(p, &n, &command_help);
	opterr = 0;
	optind = 0;	/* glibc: start over, with this optstring's mode */
}

static const struct iface_option *parser_option(const struct iface_parser *p, int id)
{
	for (size_t i = 0; p->opts[i]; i++)
		if ((int)p->opts[i]->id == id)
			return p->opts[i];
	return NULL;
}

int iface_parse_next(struct iface_parser *p)
{
	const char *word;
	int c;

	p->opt = NULL;
	p->value = NULL;
	if (p->done) {
		/* after "--" every word is an operand, unless they are a program's */
		if (p->flags & IFACE_STOP_AT_OPERAND || p->next >= p->argc)
			return IFACE_END;
		p->value = p->argv[p->next++];
		return IFACE_OPERAND;
	}
	c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);
	p->next = optind;
	switch (c) {
	case -1:
		p->done = true;
		return iface_parse_next(p);
	case 1:
		p->value = optarg;
		return IFACE_OPERAND;
	case ':':
		p->opt = parser_option(p, optopt);
		snprintf(p->word, sizeof(p->word), "--%s", p->opt ? p->opt->name : "?");
		p->value = p->word;
		return IFACE_NO_VALUE;
	case '?':
		/*
		 * The word getopt_long() just passed: an unknown long option, or
		 * one given a value it takes none of ("--force=1"); a short one
		 * is optopt (it may stand in a group, "-hx").
		 */
		word = p->argv[optind - 1];
		if (optopt > 0 && optopt < 256 && strncmp(word, "--", 2)) {
			snprintf(p->word, sizeof(p->word), "-%c", optopt);
			word = p->word;
		}
		p->value = word;
		return IFACE_UNKNOWN;
	}
	p->opt = parser_option(p, c);
	p->value = optarg;
	/* --ring 1234:5: an optional value may also be the next word */
	if (p->opt && p->opt->arg == IFACE_ARG_OPTIONAL && !optarg && optind < p->argc &&
	    p->argv[optind][0] != '-') {
		p->value = p->argv[optind++];
		p->next = optind;
	}
	return c;
}

char **iface_parse_rest(const struct iface_parser *p, int *count)
{
	*count = p->argc - p->next;
	return p->argv + p->next;
}
