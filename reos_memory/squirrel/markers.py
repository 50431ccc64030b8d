"""What get_task_context wraps its output in. Anything between these markers in an event is
Squirrel's own injection and is cut out before anything else, so it is never learned again."""

CONTEXT_OPEN = '<squirrel-context id="{id}">'
CONTEXT_CLOSE = "</squirrel-context>"
