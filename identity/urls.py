"""The OpenID Connect routes of allauth's provider (/accounts/oidc/<organization's provider id>/login/ and
…/login/callback/), served by allauth's views over identity.oidc's adapter.

Only these: allauth's own account pages (sign-up, password, e-mail management) are not used — the console signs
people in (console/signin.py) and invitations add them."""

from allauth.socialaccount.providers.saml import urls as saml_urls
from django.urls import include, path

from identity import oidc

urlpatterns = [
    path("oidc/<str:provider_id>/login/", oidc.login, name="openid_connect_login"),
    path("oidc/<str:provider_id>/login/callback/", oidc.callback, name="openid_connect_callback"),
    # allauth's SAML routes as they are: /accounts/saml/<slug>/login/, acs/, acs/finish/, sls/, metadata/.
    path("", include(saml_urls)),
]
