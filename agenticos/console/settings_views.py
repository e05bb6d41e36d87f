"""Settings (filled in below)."""
from django.http import HttpResponse


def _todo(request, *args, **kwargs):
    return HttpResponse(status=501)


profile = chat_accounts = api_keys = revoke_api_key = secrets = rotate_secret = delete_secret = _todo
model_profiles = members = change_member = budget = _todo
