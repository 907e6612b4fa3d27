/* Entry points of the subcommands; each returns the process exit status. */
#ifndef STACKSCOPE_COMMANDS_H
#define STACKSCOPE_COMMANDS_H

#define STACKSCOPE_VERSION "0.1.0"

int cmd_record(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_symbolize(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_top(int argc, char **argv);

#endif
