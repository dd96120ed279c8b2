from __future__ import annotations

from django.contrib import admin
from django.urls import path

from testproject.demo import views

urlpatterns = [
    path("", views.enqueue, name="enqueue"),
    path("jobs/<int:pk>/", views.job_status, name="job"),
    path("admin/", admin.site.urls),
]
