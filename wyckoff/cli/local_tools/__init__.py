"""Local tools: files, commands and web pages, each behind its own guard.

workspace.py decides which paths a tool may touch; files.py reads and writes them;
shell.py runs approved commands (sandbox.py confines their writes with Landlock);
web_guard.py decides which addresses may be fetched and web.py fetches them;
each tool gives its result a one-line Chinese summary (`ToolSpec.summarize`) for tool rows.
Nothing heavy is imported here: sandbox.py runs as a script before every command.
"""
