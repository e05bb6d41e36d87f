"""Generated media: the images, speech and video agents make, in one store (issue 22).

`store.py` keeps every generated file per organization (django-storages' default storage) recorded with the
run and conversation it was made in, checks the organization's quota before a provider is paid, deletes files
with their conversation and after the retention period; `views.py` serves them to members of the organization
and to the embed visitor of that conversation. The capabilities that make files (`image_generation`, …) live in
their own packages and call `store.check_quota` first and `store.save` last.
"""
