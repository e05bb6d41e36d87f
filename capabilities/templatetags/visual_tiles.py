"""`{% visual_tile_origin %}`: the one map-tile origin a visual's sandbox admits (VISUAL_MAP_TILES), for the
console's frame policy in console/static/console/visuals.js; "" when no tile server is configured."""

from django import template

from capabilities.visuals.maps import tile_origin

register = template.Library()


@register.simple_tag
def visual_tile_origin() -> str:
    return tile_origin()
