from rest_framework import pagination


class Pagination(pagination.LimitOffsetPagination):
    default_limit = 50
    max_limit = 200
